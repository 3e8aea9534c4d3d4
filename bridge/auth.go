package bridge

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"

	"github.com/harnessd/harnessd/internal/bearer"
)

// guard wraps the MCP handler: every request needs the bearer token (the
// answer without it closes the connection), and a POST body is read
// (bounded) before mcp-go sees it.
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
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
			if err != nil {
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, "cannot read request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
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
