package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/harnessd/harnessd/internal/bearer"
)

// rebound reports a request that reached a loopback listener by a Host
// that is neither a loopback name (localhost, *.localhost) nor an IP
// literal: DNS rebinding, a page whose name was re-resolved to 127.0.0.1,
// is same-origin to the browser, so only the name it must use gives it
// away. A listener on another address was exposed on purpose and is not
// asked.
func rebound(r *http.Request) bool {
	la, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if la == nil || !la.IP.IsLoopback() || r.Host == "" {
		return false
	}
	h := r.Host
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return false
	}
	_, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err != nil
}

// crossOrigin refuses a browser's cross-origin request that is not a GET,
// HEAD or OPTIONS: Sec-Fetch-Site other than same-origin or none, or,
// without it, an Origin whose host is not the request's Host. A client that
// is not a browser sends neither header and passes (net/http's
// CrossOriginProtection). A GET changes nothing, and a cross-origin page
// cannot read its answer; /ws is a GET whose upgrade checks the Origin itself
// (coder/websocket's Accept).
var crossOrigin = http.NewCrossOriginProtection()

// guard wraps h with the orchestration surface's checks: the peer must not
// be a harness process (looked up once per connection, on its first guarded
// request; see connPeer), and with an API token configured the request must
// carry it: Authorization: Bearer TOKEN; HTTP Basic credentials whose
// password is the token (any user name) — what the websockets library
// sends for ws://user:TOKEN@host/ws, so OpenEnv's unmodified client can
// authenticate through its base URL; or ?token= for clients that cannot set
// headers (the query parameter is removed before h runs).
//
// Without a token, a request to a loopback listener by a name that is not
// a loopback one is refused (rebound). A browser's cross-origin request
// (crossOrigin) is refused before the
// token is looked at: a page the user opened must not drive the daemon,
// with or without credentials the browser remembered.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refusedPeer(w, r) {
			return
		}
		if s.token == "" && rebound(r) {
			s.log.Warn("refused a request by a name on a loopback listener without an API token (DNS rebinding?); set --api-token-file to serve other names",
				"host", r.Host, "path", r.URL.Path)
			writeJSONStatus(w, http.StatusForbidden, map[string]any{"detail": "forbidden: without an API token a loopback listener answers only localhost and IP addresses"})
			return
		}
		if err := crossOrigin.Check(r); err != nil {
			s.log.Warn("refused a browser's cross-origin request", "err", err, "path", r.URL.Path, "origin", r.Header.Get("Origin"))
			writeJSONStatus(w, http.StatusForbidden, map[string]any{"detail": "forbidden: a cross-origin request from a browser page"})
			return
		}
		if s.token != "" && !bearer.Authorized(r, s.token) {
			w.Header().Add("WWW-Authenticate", `Bearer realm="harnessd"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="harnessd"`)
			writeJSONStatus(w, http.StatusUnauthorized, map[string]any{"detail": "unauthorized"})
			return
		}
		h.ServeHTTP(w, r)
	})
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
