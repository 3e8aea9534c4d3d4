package bridge

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/internal/bearer"
	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/wire"
)

// guard wraps the MCP handler: every request needs the bearer token (the
// answer without it closes the connection); a POST body is read before
// mcp-go sees it, bounded on its own (MaxBodyBytes) and with the door's
// other bodies (its body budget and read timeout, held until the request
// is answered); an initialize, or a GET without a session (mcp-go makes
// one for either), needs room in the session table; a GET naming a
// session that is not live is answered 404; and a request of a live
// session keeps that session from eviction while it runs.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if presented, ok := s.authorized(r); !ok {
			challenge := `Bearer realm="harnessd-bridge"`
			if presented {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			w.Header().Set("Connection", "close") // a keyless request keeps no connection
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost && r.Body != nil {
			if r.ContentLength > s.maxBody {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			in, err := s.bodies.Open(w, r)
			if err != nil {
				refuseBody(w, err)
				return
			}
			defer in.Release()
			body, err := io.ReadAll(http.MaxBytesReader(w, io.NopCloser(in), s.maxBody))
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
					return
				}
				if !refuseBody(w, err) {
					http.Error(w, "cannot read request body", http.StatusBadRequest)
				}
				return
			}
			// What mcp-go's decoding makes of it (a tool's arguments
			// become Go values) is held with it.
			if err := in.ChargeValues(wire.DecodedValues(body), doorcap.DefaultDecodedValueBytes); err != nil {
				refuseBody(w, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if isInitialize(body) {
				done, err := s.sessions.admit()
				if err != nil {
					refuseInitialize(w, body, err)
					return
				}
				defer done()
			}
		}
		id := r.Header.Get(server.HeaderKeySessionID)
		if r.Method == http.MethodGet && id == "" {
			// mcp-go makes a session for a GET without one, as for an
			// initialize.
			done, err := s.sessions.admit()
			if err != nil {
				w.Header().Set("Retry-After", "1")
				w.Header().Set("X-Harnessd-Refused", ReasonSessions)
				http.Error(w, "harnessd: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			defer done()
		}
		if id != "" {
			done, live := s.sessions.use(id)
			if !live && r.Method == http.MethodGet {
				// mcp-go would open (and keep) a session under any ID a GET
				// names; only live ones are served.
				http.Error(w, "harnessd: no live MCP session "+strconv.Quote(id)+"; initialize first", http.StatusNotFound)
				return
			}
			defer done()
		}
		next.ServeHTTP(w, r)
	})
}

// refuseBody answers a body the door's budget refused (503) or its read
// timeout dropped (408), naming the cause and the bound, and reports
// whether err was either.
func refuseBody(w http.ResponseWriter, err error) bool {
	status, msg, ok := doorcap.BodyRefusal(w, err)
	if ok {
		http.Error(w, "harnessd: "+msg, status)
	}
	return ok
}

// authorized reports whether r carries the Server's bearer token, and
// whether it presented a bearer token at all. The comparison is constant-time
// (over SHA-256 digests, so that not even the length is compared early).
func (s *Server) authorized(r *http.Request) (presented, ok bool) {
	tok, found := bearer.Token(r.Header.Get(bearer.HeaderName))
	if !found {
		return false, false
	}
	sum := sha256.Sum256([]byte(tok))
	return true, subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}
