package redirect

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A client with SameOrigin follows a redirect to another path of the same
// server (the control), and refuses one to another port of the same host:
// the other server never sees the request or its key header.
func TestSameOriginFollowsOnlyWithinTheServer(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		io.WriteString(w, "other:"+r.Header.Get("X-Api-Key"))
	}))
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/here", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w, r, other.URL+"/", http.StatusTemporaryRedirect)
		default:
			io.WriteString(w, "here:"+r.Header.Get("X-Api-Key"))
		}
	}))
	defer first.Close()
	c := &http.Client{CheckRedirect: SameOrigin}
	get := func(path string) (string, error) {
		req, _ := http.NewRequest(http.MethodGet, first.URL+path, nil)
		req.Header.Set("X-Api-Key", "k")
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := get("/moved"); err != nil || got != "here:k" {
		t.Fatalf("the control, a redirect within the server: %q %v", got, err)
	}
	if got, err := get("/away"); err == nil {
		t.Errorf("a redirect to another port was followed: %q", got)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other server got %d requests", n)
	}
}
