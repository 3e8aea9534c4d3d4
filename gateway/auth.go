package gateway

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized reports whether r presents the episode's key, in any of the
// places agents put one: Authorization: Bearer, x-api-key (Anthropic),
// x-goog-api-key or ?key= (Gemini). Each candidate is compared in constant
// time; presenting the upstream's real key is as wrong as any other.
func (g *Gateway) authorized(r *http.Request) bool {
	ok := 0
	check := func(v string) {
		if v != "" {
			ok |= subtle.ConstantTimeCompare([]byte(v), g.key)
		}
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		check(strings.TrimSpace(a[7:]))
	}
	check(r.Header.Get("X-Api-Key"))
	check(r.Header.Get("X-Goog-Api-Key"))
	check(r.URL.Query().Get("key"))
	return ok == 1
}
