package egress

// NoProxy is the NO_PROXY value given with the proxy variables: the
// harness's own doors on loopback (bridge, model gateway) stay direct.
const NoProxy = "127.0.0.1,localhost,::1"

// Environ returns the environment variables that point a harness at a proxy
// listening on addr (host:port): HTTP_PROXY, HTTPS_PROXY and their
// lower-case forms, and NO_PROXY/no_proxy set to NoProxy.
func Environ(addr string) []string {
	u := "http://" + addr
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=" + NoProxy, "no_proxy=" + NoProxy,
	}
}
