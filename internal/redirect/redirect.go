// Package redirect is the redirect policy of the daemon's HTTP clients
// that carry credentials (a tool server's headers, a simulated user's
// model key): a redirect is followed only within the origin of the first
// request (scheme, host and port), so no header reaches a server the
// operator did not name. It owns only that policy.
package redirect

import (
	"fmt"
	"net/http"
)

// MaxHops is how many redirects SameOrigin follows.
const MaxHops = 10

// SameOrigin is an http.Client CheckRedirect: it refuses a redirect to
// another scheme, host or port than the first request's (net/http would
// strip only Authorization and cookies, and only across hosts: a custom
// key header, or any header to another port of the same host, would
// follow), and more than MaxHops.
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("refused a redirect from %s://%s to %s://%s: the client follows redirects only within the server it was given",
			first.Scheme, first.Host, req.URL.Scheme, req.URL.Host)
	}
	if len(via) >= MaxHops {
		return fmt.Errorf("stopped after %d redirects", MaxHops)
	}
	return nil
}
