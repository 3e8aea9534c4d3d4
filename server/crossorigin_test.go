package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// postFrom sends POST path with body and the given headers (Host among them),
// and returns the status.
func postFrom(t *testing.T, ts *testServer, path, body string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestBrowsersCannotDriveTheOrchestrationSurface (red team 11): without an
// API token (the default, on 127.0.0.1:8000) every page the user's
// browser opened could drive the daemon: a cross-site POST with a text/plain
// body (a "simple" request, sent without a preflight) to /reset started an
// episode and to /step stepped the HTTP session with the page's message.
// With a token, HTTP Basic credentials the browser remembered from the
// console's prompt went along too. Now a browser's cross-origin request
// (Sec-Fetch-Site, else an Origin whose host is not the request's) to a
// guarded route is refused (403) whatever it carries. The controls: the same
// request from a non-browser client (no Sec-Fetch-Site, no Origin) and
// from the console's own page (same-origin) start episodes.
func TestBrowsersCannotDriveTheOrchestrationSurface(t *testing.T) {
	ts := start(t, Options{MaxSessions: 4})
	crossSite := map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
	for name, hdr := range map[string]map[string]string{
		"cross-site":       crossSite,
		"origin only":      {"Content-Type": "text/plain", "Origin": "https://evil.example"},
		"null origin":      {"Content-Type": "text/plain", "Origin": "null"},
		"same-site (port)": {"Content-Type": "text/plain", "Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"},
	} {
		if code := postFrom(t, ts, "/reset", `{}`, hdr); code != http.StatusForbidden {
			t.Errorf("%s POST /reset: %d, want 403", name, code)
		}
	}
	if n := ts.ActiveSessions(); n != 0 {
		t.Errorf("the refused requests left %d sessions", n)
	}
	// Controls.
	if code := postFrom(t, ts, "/reset", `{}`, map[string]string{"Content-Type": "application/json"}); code != http.StatusOK {
		t.Fatalf("a client's POST /reset: %d, want 200", code)
	}
	if code := postFrom(t, ts, "/reset", `{}`, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin", "Origin": ts.url}); code != http.StatusOK {
		t.Fatalf("the console's own POST /reset: %d, want 200", code)
	}

	// With a token: Basic credentials a browser remembered go along with a
	// cross-site request; it is refused all the same.
	tok := start(t, Options{APIToken: "api-token", MaxSessions: 2})
	withCreds := map[string]string{"Authorization": basic("u", "api-token")}
	for k, v := range crossSite {
		withCreds[k] = v
	}
	if code := postFrom(t, tok, "/reset", `{}`, withCreds); code != http.StatusForbidden {
		t.Errorf("cross-site POST /reset with remembered Basic credentials: %d, want 403", code)
	}
	if code := postFrom(t, tok, "/reset", `{}`, map[string]string{"Authorization": basic("u", "api-token")}); code != http.StatusOK {
		t.Fatalf("control: a client's POST /reset with the token: %d, want 200", code)
	}
}

// getWithHost sends GET path with the Host header host and returns the status.
func getWithHost(t *testing.T, ts *testServer, path, host string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestALoopbackListenerWithoutATokenAnswersOnlyLoopbackNames (red team 11):
// DNS rebinding. A page at http://rebind.evil.example:8000 whose name is
// then re-resolved to 127.0.0.1 reads and drives the daemon as its own
// origin (same-origin to the browser, so no cross-origin check sees it):
// without an API token every route answered a request whose Host was
// that name, /web/api/records (every record) and /ws included. Now a
// loopback listener without a token answers only Hosts that are loopback
// names or IP literals (which a rebinding page cannot have). The controls:
// 127.0.0.1, localhost and [::1] are answered, and with a token a foreign
// Host is too (the token is the defence then).
func TestALoopbackListenerWithoutATokenAnswersOnlyLoopbackNames(t *testing.T) {
	ts := start(t, Options{})
	port := ts.url[strings.LastIndexByte(ts.url, ':'):]
	for _, path := range []string{"/web/api/records", "/state", "/metadata"} {
		if code := getWithHost(t, ts, path, "rebind.evil.example"+port); code != http.StatusForbidden {
			t.Errorf("GET %s with Host rebind.evil.example%s: %d, want 403", path, port, code)
		}
	}
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "[::1]" + port, "app.localhost" + port} {
		if code := getWithHost(t, ts, "/metadata", host); code != http.StatusOK {
			t.Errorf("control: GET /metadata with Host %s: %d, want 200", host, code)
		}
	}
	tok := start(t, Options{APIToken: "api-token"})
	req, _ := http.NewRequest(http.MethodGet, tok.url+"/metadata", nil)
	req.Host = "harnessd.example" + port
	req.Header.Set("Authorization", "Bearer api-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("control: with the token a foreign Host got %d, want 200", resp.StatusCode)
	}
}
