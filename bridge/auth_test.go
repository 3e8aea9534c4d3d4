package bridge

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

func TestUnauthorized(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	hc := httpClient(t)
	cases := []struct {
		name, auth string
		invalid    bool // the challenge says invalid_token
	}{
		{"no header", "", false},
		{"wrong token", "Bearer " + strings.Repeat("x", len(f.srv.Token())), true},
		{"token prefix", "Bearer " + f.srv.Token()[:10], true},
		{"basic scheme", "Basic " + f.srv.Token(), false},
		{"empty bearer", "Bearer ", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				req, _ := http.NewRequestWithContext(testCtx(t), method, f.srv.URL(), strings.NewReader(initializeBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s: status %d, want 401", method, resp.StatusCode)
				}
				ch := resp.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(ch, "Bearer ") || strings.Contains(ch, "invalid_token") != tc.invalid {
					t.Fatalf("%s: WWW-Authenticate = %q", method, ch)
				}
			}
		})
	}
	// The scheme is case-insensitive; the right token gets in.
	r := rawPost(t, hc, f.srv.URL(), "", "", initializeBody)
	if r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.status)
	}
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, f.srv.URL(), strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "bearer "+f.srv.Token())
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("lower-case scheme with the right token: %d", resp.StatusCode)
	}
	// The mcp-go client reports a bad token as an authorization error.
	_, err = dial(t, f.srv.URL(), "not-the-token")
	if !client.IsAuthorizationRequiredError(err) {
		t.Fatalf("dial with a wrong token: %v, want an authorization error", err)
	}
}

func TestStaleTokenLockedOut(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	old := f.srv
	oldClient := connect(t, old.URL(), old.Token())
	// A new episode: a new server for the same tools.
	next := serve(t, f.cat, ServerOptions{})
	if next.Token() == old.Token() || next.URL() == old.URL() {
		t.Fatalf("a new Serve reused the token or URL: %s %s", next.URL(), old.URL())
	}
	if _, err := dial(t, next.URL(), old.Token()); !client.IsAuthorizationRequiredError(err) {
		t.Fatalf("previous token on the new server: %v, want 401", err)
	}
	if r := rawPost(t, httpClient(t), next.URL(), old.Token(), "", initializeBody); r.status != http.StatusUnauthorized {
		t.Fatalf("previous token, raw: status %d", r.status)
	}
	// The earlier server still serves its own client until it is closed...
	if text, _ := call(t, oldClient, "echo", map[string]any{"text": "still here"}); text != "still here" {
		t.Fatalf("old client before close: %q", text)
	}
	if err := old.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// ...and nothing after.
	if _, err := callErr(testCtx(t), oldClient, "echo", map[string]any{"text": "x"}); err == nil {
		t.Fatal("a call to a closed server succeeded")
	}
	c := connect(t, next.URL(), next.Token())
	if text, _ := call(t, c, "add", map[string]any{"a": 1, "b": 1}); text != "2" {
		t.Fatalf("new server: add = %q", text)
	}
}
