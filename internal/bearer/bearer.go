// Package bearer writes and reads the HTTP Authorization header of a bearer
// token (RFC 6750): the one place that knows the header's form. It owns
// only that; it must not store tokens, compare them or decide who may pass.
package bearer

import "strings"

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
