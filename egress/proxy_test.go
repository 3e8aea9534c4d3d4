package egress

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// TestConnectReachesTLSServer: an HTTPS request through CONNECT to an
// allowed host reaches the test's TLS server, and bytes flow both ways.
func TestConnectReachesTLSServer(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(append([]byte("echo:"), b...))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}})

	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})
	tr.TLSClientConfig.ServerName = "example.com" // in httptest's certificate
	defer tr.CloseIdleConnections()
	payload := bytes.Repeat([]byte("0123456789"), 10_000)
	resp, err := (&http.Client{Transport: tr}).Post("https://allowed.test:"+port+"/", "text/plain", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, resp); got != "echo:"+string(payload) {
		t.Fatalf("echo of %d bytes came back as %d bytes", len(payload), len(got))
	}
	tr.CloseIdleConnections()

	c := tp.reports.next(t)
	if c.Method != MethodConnect || c.Host != "allowed.test" || c.Port == 0 || !c.Allowed || c.Status != 200 {
		t.Fatalf("report: %+v", c)
	}
	if want := netip.MustParseAddrPort("127.0.0.1:" + port); c.Addr != want {
		t.Fatalf("dialled %v, want %v", c.Addr, want)
	}
	if c.BytesUp < int64(len(payload)) || c.BytesDown < int64(len(payload)) {
		t.Fatalf("bytes up %d, down %d: both should exceed the %d-byte payload", c.BytesUp, c.BytesDown, len(payload))
	}
	// One lookup, and the dial went to the literal it returned: there is no
	// second resolution for a rebinding answer to slip into.
	if d := tp.dialer.dials(); len(d) != 1 || d[0] != "127.0.0.1:"+port {
		t.Fatalf("dials %v", d)
	}
	if n := tp.hosts.lookups.Load(); n != 1 {
		t.Fatalf("%d lookups for one tunnel", n)
	}
}

// TestRefusedHostNeverDialled: a host outside the policy gets 403 with a
// reason, is neither resolved nor dialled, over CONNECT and plain HTTP.
func TestRefusedHostNeverDialled(t *testing.T) {
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test", "*.allowed.test"}}})
	for _, target := range []string{"other.test:443", "allowed.test:22", "xallowed.test:443", "allowed.test.evil:443"} {
		_, _, resp := tp.connect(t, target)
		b := body(t, resp)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "not allowed by this environment's network policy") {
			t.Fatalf("CONNECT %s: %d %q", target, resp.StatusCode, b)
		}
		if c := tp.reports.next(t); c.Allowed || c.Status != 403 || c.Reason == "" || c.Addr.IsValid() {
			t.Fatalf("report: %+v", c)
		}
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})}}).Get("http://other.test/x")
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(b, "egress: other.test:80 is not allowed") {
		t.Fatalf("GET: %d %q", resp.StatusCode, b)
	}
	if c := tp.reports.next(t); c.Method != MethodHTTP || c.RequestMethod != "GET" || c.Allowed {
		t.Fatalf("report: %+v", c)
	}
	if n := tp.hosts.lookups.Load(); n != 0 {
		t.Fatalf("%d lookups of refused hosts", n)
	}
	if d := tp.dialer.dials(); len(d) != 0 {
		t.Fatalf("refused hosts dialled: %v", d)
	}
}

// TestDefaultDenyRefusesLoopbackAndMetadata: under the default guard an
// allowed name that resolves to a loopback, unspecified, link-local or
// multicast address — or has one such address among others — is refused,
// and nothing is dialled.
func TestDefaultDenyRefusesLoopbackAndMetadata(t *testing.T) {
	h := &hosts{m: map[string][]netip.Addr{
		"loop.test":      loop("127.0.0.1"),
		"loop6.test":     loop("::1"),
		"mapped.test":    loop("::ffff:127.0.0.1"),
		"zero.test":      loop("0.0.0.0"),
		"metadata.test":  loop("169.254.169.254"),
		"linklocal.test": loop("fe80::1"),
		"mcast.test":     loop("224.0.0.1"),
		"mixed.test":     {netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("127.0.0.2")},
	}}
	p, err := New(Options{Policy: Policy{Allow: []string{"*.test"}}, Resolve: h.resolve})
	if err == nil {
		p.Close(t.Context())
		t.Fatal("*.test (a whole top-level domain) was accepted")
	}
	d := &dialer{}
	allow := make([]string, 0, len(h.m))
	for name := range h.m {
		allow = append(allow, name)
	}
	rep := newReports()
	p, err = New(Options{Policy: Policy{Allow: allow}, Resolve: h.resolve, Dial: d.dial, OnConnection: rep.add})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(t.Context())
	for name, addrs := range h.m {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, &http.Request{Method: http.MethodConnect, Host: name + ":443", URL: &url.URL{Host: name + ":443"}, Header: http.Header{}})
		bad := addrs[len(addrs)-1].Unmap().String()
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "resolves to "+bad) || !strings.Contains(w.Body.String(), "never allowed") {
			t.Errorf("%s: %d %q", name, w.Code, w.Body.String())
		}
		if c := <-rep.ch; c.Allowed || c.Status != 403 {
			t.Errorf("%s: report %+v", name, c)
		}
	}
	if got := d.dials(); len(got) != 0 {
		t.Fatalf("dialled %v", got)
	}
}

// TestLoopbackTestHostRefusedOverTheWire: the same over a real socket, with
// an echo server that would answer if the proxy dialled it.
func TestLoopbackTestHostRefusedOverTheWire(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}, Deny: DefaultDeny})
	_, _, resp := tp.connect(t, "allowed.test:"+port)
	if b := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "127.0.0.1, a loopback address: never allowed") {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if d := tp.dialer.dials(); len(d) != 0 {
		t.Fatalf("dialled %v", d)
	}
}

// TestDenyAddrsBeatThePolicy: an address in DenyAddrs is refused even when
// the pattern matches and the prefixes allow it; another address of the same
// test host is not.
func TestDenyAddrsBeatThePolicy(t *testing.T) {
	port := echoServer(t)
	tp := startProxy(t, Options{
		Policy:    Policy{Allow: []string{"allowed.test:" + port, "other.test:" + port}},
		DenyAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")},
	})
	tp.hosts.m["other.test"] = loop("127.0.0.2")
	_, _, resp := tp.connect(t, "allowed.test:"+port)
	if b := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "one of the daemon's own addresses") {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if d := tp.dialer.dials(); len(d) != 0 {
		t.Fatalf("dialled %v", d)
	}
	<-tp.reports.ch
	// 127.0.0.2 is loopback too on Linux, but not a denied address here:
	// the tunnel opens (the echo server listens on 127.0.0.1 only, so the
	// dial may fail; what matters is that it was attempted).
	_, _, resp = tp.connect(t, "other.test:"+port)
	resp.Body.Close()
	if d := tp.dialer.dials(); len(d) != 1 || d[0] != "127.0.0.2:"+port {
		t.Fatalf("dials %v (status %d)", d, resp.StatusCode)
	}
}

// rawHTTPServer answers each request on loopback with the raw response
// resp, after handing the request it read to got. It returns its port.
func rawHTTPServer(t testing.TB, resp string, got chan<- *http.Request) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufioReader(c))
			if err == nil {
				got <- req
				io.WriteString(c, resp)
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestForwardStripsHopByHop: a plain-HTTP absolute-URI request reaches the
// upstream without hop-by-hop headers, Proxy-Authorization or the URL's
// user information, and the response comes back without its own hop-by-hop
// headers.
func TestForwardStripsHopByHop(t *testing.T) {
	got := make(chan *http.Request, 1)
	port := rawHTTPServer(t, "HTTP/1.1 200 OK\r\n"+
		"Connection: X-Resp-Hop\r\nX-Resp-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\n"+
		"Upgrade: h2c\r\nX-Resp-Keep: yes\r\nContent-Length: 5\r\n\r\nhello", got)
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}})

	conn, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "GET http://user:pw@allowed.test:" + port + "/path?q=1 HTTP/1.1\r\n" +
		"Host: internal.example\r\n" + // an absolute URI's own host wins
		"Connection: X-Hop\r\nX-Hop: 1\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n" +
		"Keep-Alive: 300\r\nTe: deflate\r\nTrailer: X-T\r\nX-Keep: yes\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufioReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != 200 || b != "hello" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	for _, h := range []string{"X-Resp-Hop", "Keep-Alive", "Proxy-Authenticate", "Upgrade"} {
		if v := resp.Header.Get(h); v != "" {
			t.Errorf("response kept hop-by-hop %s: %q", h, v)
		}
	}
	if resp.Header.Get("X-Resp-Keep") != "yes" {
		t.Errorf("response lost an end-to-end header: %v", resp.Header)
	}
	up := <-got
	for _, h := range []string{"X-Hop", "Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Authorization"} {
		if v := up.Header.Get(h); v != "" {
			t.Errorf("upstream got %s: %q", h, v)
		}
	}
	if up.Header.Get("X-Keep") != "yes" || up.Host != "allowed.test:"+port || up.RequestURI != "/path?q=1" {
		t.Errorf("upstream request: %s host %q, headers %v", up.RequestURI, up.Host, up.Header)
	}
	for k := range up.Header {
		if strings.HasPrefix(k, "X-Forwarded") || k == "Forwarded" || k == "Via" {
			t.Errorf("upstream got %s", k)
		}
	}
	c := tp.reports.next(t)
	if c.Method != MethodHTTP || c.RequestMethod != "GET" || !c.Allowed || c.Status != 200 || c.BytesUp == 0 || c.BytesDown == 0 {
		t.Fatalf("report %+v", c)
	}
	if c.Addr != netip.MustParseAddrPort("127.0.0.1:"+port) {
		t.Fatalf("dialled %v", c.Addr)
	}
}

// TestBadRequests: requests a forward proxy cannot serve get 400 with a
// reason, and garbage gets net/http's 400; nothing is dialled.
func TestBadRequests(t *testing.T) {
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test"}}})
	cases := []struct{ raw, want string }{
		{"GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "absolute URI"},
		{"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "use CONNECT"},
		{"CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "CONNECT needs host:port"},
		{"CONNECT allowed.test:99999 HTTP/1.1\r\nHost: allowed.test:99999\r\n\r\n", "not a number from 1 to 65535"},
		{"CONNECT bad_host!:443 HTTP/1.1\r\nHost: bad_host!:443\r\n\r\n", "not an IP address or a valid host name"},
		{"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", "upgrades are not forwarded"},
		{"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03garbage\r\n\r\n", ""},
	}
	for _, tc := range cases {
		conn, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, tc.raw)
		resp, err := http.ReadResponse(bufioReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.raw, err)
		}
		b := body(t, resp)
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, tc.want) {
			t.Errorf("%q: %d %q", tc.raw, resp.StatusCode, b)
		}
	}
	if d := tp.dialer.dials(); len(d) != 0 {
		t.Fatalf("dialled %v", d)
	}
}

// TestEnviron: the proxy variables a harness is given.
func TestEnviron(t *testing.T) {
	env := Environ("127.0.0.1:3128")
	want := map[string]bool{
		"HTTP_PROXY=http://127.0.0.1:3128": true, "HTTPS_PROXY=http://127.0.0.1:3128": true,
		"http_proxy=http://127.0.0.1:3128": true, "https_proxy=http://127.0.0.1:3128": true,
		"NO_PROXY=127.0.0.1,localhost,::1": true, "no_proxy=127.0.0.1,localhost,::1": true,
	}
	if len(env) != len(want) {
		t.Fatalf("%v", env)
	}
	for _, e := range env {
		if !want[e] {
			t.Fatalf("unexpected %q", e)
		}
	}
}

// TestForwardFailuresReported: an upstream that is not there gets 502 with
// a reason; one that cuts its response short is reported as cut off.
func TestForwardFailuresReported(t *testing.T) {
	got := make(chan *http.Request, 4) // the client may retry a GET that got nothing
	cut := rawHTTPServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", got)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, gone, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // nothing listens there now
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"allowed.test:" + cut, "allowed.test:" + gone}}})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Get("http://allowed.test:" + gone + "/")
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != http.StatusBadGateway || !strings.Contains(b, "cannot connect") {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	if c := tp.reports.next(t); !c.Allowed || c.Status != 502 || !strings.Contains(c.Reason, "cannot connect") {
		t.Fatalf("report %+v", c)
	}

	// The client sees either a broken body or, when the header was still
	// in the proxy's buffer as it dropped the connection, no response.
	resp, err = client.Get("http://allowed.test:" + cut + "/")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a cut-off response read to the end without error")
	}
	<-got
	if c := tp.reports.next(t); c.Status != 200 || !strings.Contains(c.Reason, "cut off") || c.BytesDown == 0 {
		t.Fatalf("report %+v", c)
	}
}
