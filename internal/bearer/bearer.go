// Package bearer writes and reads the credentials of a token in an HTTP
// request: the Authorization header of a bearer token (RFC 6750), the
// Basic password and the ?token= parameter that clients which cannot set
// the header use (Authorized). It must not store tokens or decide which
// routes need one.
package bearer

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// HeaderName is the HTTP header carrying the credentials.
const HeaderName = "Authorization"

// scheme is the authentication scheme, matched case-insensitively.
const scheme = "Bearer"

// Header returns the Authorization header value for token.
func Header(token string) string { return scheme + " " + token }

// Token returns the token of an Authorization header value, and whether the
// value is bearer credentials at all. The scheme is case-insensitive and
// the token is trimmed of surrounding spaces.
func Token(header string) (string, bool) {
	s, tok, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(s, scheme) {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// Authorized reports whether r carries token: as Authorization: Bearer
// TOKEN; as HTTP Basic credentials whose password is the token (any user
// name), percent-encoded or not — what a client sends for a base URL
// http://user:TOKEN@host, where "/", "@" or ":" must be escaped; or as
// ?token=TOKEN, which is removed from r's query. The comparison takes
// constant time.
func Authorized(r *http.Request, token string) bool {
	is := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 }
	got := ""
	if a := r.Header.Get(HeaderName); a != "" {
		if t, ok := Token(a); ok {
			got = t
		} else if _, pass, ok := r.BasicAuth(); ok {
			if u, err := url.PathUnescape(pass); err == nil && is(u) {
				return true
			}
			got = pass
		}
	} else if q := r.URL.Query(); q.Has("token") {
		got = q.Get("token")
		q.Del("token")
		r.URL.RawQuery = q.Encode()
	}
	return is(got)
}
