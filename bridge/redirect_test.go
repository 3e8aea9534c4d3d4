package bridge

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
)

// Guards the redirect policy of the HTTP tool client (63fc567: the
// client's CheckRedirect is redirect.SameOrigin). The tool server the
// operator named (front, on 127.0.0.1) answers with a 307: to another port
// of the same host, the redirect is refused and the other server never
// sees a request, nor the operator's Authorization and key headers (Go's
// own client would follow it with both: it strips Authorization only
// across hosts, and a custom header never); within front's own origin
// (the positive control) it is followed and the source connects and lists
// its tools. Both servers in front of a real bridge, so that a followed
// redirect to the other port connects too.
func TestHTTPSourceFollowsRedirectsOnlyWithinItsServer(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	target, err := url.Parse(f.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL = target; r.Out.Host = target.Host }}
	var otherHits atomic.Int32
	var otherKey atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		otherKey.Store(r.Header.Get("X-Api-Key"))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	var moved atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
		case "/moved":
			moved.Add(1)
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		case "/here":
			proxy.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(front.Close)
	headers := map[string]string{"Authorization": "Bearer " + f.srv.Token(), "X-Api-Key": "operator-key"}

	t.Run("same origin", func(t *testing.T) {
		src := NewHTTPSource(HTTPSpec{Name: "moved", URL: front.URL + "/moved", Headers: headers}, testLog())
		t.Cleanup(func() { src.Close(testCtx(t)) })
		if err := src.Start(testCtx(t)); err != nil {
			t.Fatalf("Start through a redirect within the server: %v", err)
		}
		tools, err := src.Tools(testCtx(t))
		if err != nil || len(tools) == 0 {
			t.Fatalf("Tools through a redirect within the server: %d tools, %v", len(tools), err)
		}
		if moved.Load() == 0 {
			t.Fatal("the control went through no redirect")
		}
	})
	t.Run("another port", func(t *testing.T) {
		src := NewHTTPSource(HTTPSpec{Name: "away", URL: front.URL + "/away", Headers: headers}, testLog())
		t.Cleanup(func() { src.Close(testCtx(t)) })
		err := src.Start(testCtx(t))
		if err == nil {
			t.Errorf("Start through a redirect to %s connected, want the redirect refused", other.URL)
		}
		if n := otherHits.Load(); n != 0 {
			t.Errorf("the server on the other port got %d requests (X-Api-Key %q)", n, otherKey.Load())
		}
	})
}
