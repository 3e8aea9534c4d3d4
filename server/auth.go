package server

import (
	"crypto/subtle"
	"net/http"
	"net/url"

	"github.com/harnessd/harnessd/internal/bearer"
)

// guard wraps h with the orchestration surface's checks: the peer must not
// be a harness process (looked up once per connection, on its first guarded
// request; see connPeer), and with an API token configured the request must
// carry it: Authorization: Bearer TOKEN; HTTP Basic credentials whose
// password is the token (any user name) — what the websockets library
// sends for ws://user:TOKEN@host/ws, so OpenEnv's unmodified client can
// authenticate through its base URL; or ?token= for clients that cannot set
// headers (the query parameter is removed before h runs).
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refusedPeer(w, r) {
			return
		}
		if s.token != "" && !s.authorized(r) {
			w.Header().Add("WWW-Authenticate", `Bearer realm="harnessd"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="harnessd"`)
			writeJSONStatus(w, http.StatusUnauthorized, map[string]any{"detail": "unauthorized"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	got := ""
	if a := r.Header.Get(bearer.HeaderName); a != "" {
		if t, ok := bearer.Token(a); ok {
			got = t
		} else if _, pass, ok := r.BasicAuth(); ok {
			// A token with "/", "@" or ":" must be percent-encoded in a base
			// URL (http://harnessd:s3cr3t%2Ft%40k@host); clients send the
			// user information as written, so the password is compared
			// unescaped too (and as it came, for a raw token).
			if u, err := url.PathUnescape(pass); err == nil && s.tokenIs(u) {
				return true
			}
			got = pass
		}
	} else if q := r.URL.Query(); q.Has("token") {
		got = q.Get("token")
		q.Del("token")
		r.URL.RawQuery = q.Encode()
	}
	return s.tokenIs(got)
}

// tokenIs compares got with the API token in constant time.
func (s *Server) tokenIs(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

// refusedPeer answers 403 and reports true when the connection's peer is a
// process of a harness tree, or closed its connection before the check
// could tell (a harness that sends a request and closes at once must not
// slip through that way). A failed lookup does not make the peer a harness:
// it is logged and the request goes on. Every route closed to harnesses
// (guard, peerOnly) asks here.
func (s *Server) refusedPeer(w http.ResponseWriter, r *http.Request) bool {
	p, ok, err := peerOf(r.Context(), s.opts.Supervisor)
	switch {
	case !ok:
		return false
	case err != nil:
		s.log.Warn("peer check failed; peer treated as not a harness", "err", err, "path", r.URL.Path)
		return false
	case p.Harness:
		s.log.Warn("refused a connection from a harness process", "peer_pid", p.PID, "peer_cgroup_id", p.CgroupID, "path", r.URL.Path)
		writeJSONStatus(w, http.StatusForbidden, map[string]any{"detail": "forbidden: harness processes cannot reach the orchestration API"})
		return true
	case p.Gone:
		s.log.Warn("refused a request whose peer has closed its connection", "path", r.URL.Path)
		writeJSONStatus(w, http.StatusForbidden, map[string]any{"detail": "forbidden: the peer closed its connection before the peer check"})
		return true
	}
	return false
}
