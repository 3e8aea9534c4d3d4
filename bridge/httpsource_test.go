package bridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestHTTPSource chains two bridges: bridge A serves a stdio upstream, and
// an HTTP source reaches A like any streamable-HTTP MCP server.
func TestHTTPSource(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	src := NewHTTPSource(HTTPSpec{Name: "remote", URL: f.srv.URL(),
		Headers: map[string]string{"Authorization": "Bearer " + f.srv.Token()}}, testLog())
	t.Cleanup(func() { src.Close(testCtx(t)) })
	cat := newCatalog(t, CatalogOptions{}, src)
	b := serve(t, cat, ServerOptions{})
	c := connect(t, b.URL(), b.Token())
	if text, _ := call(t, c, "add", map[string]any{"a": 20, "b": 22}); text != "42" {
		t.Fatalf("add through two bridges = %q", text)
	}
	if text, _ := call(t, c, "env_read_file", map[string]any{"path": "x"}); text != "contents of x" {
		t.Fatalf("env_read_file through two bridges = %q", text)
	}
	// Schemas survive two hops byte for byte.
	hc := httpClient(t)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	r1 := rawPost(t, hc, f.srv.URL(), f.srv.Token(), rawSession(t, hc, f.srv.URL(), f.srv.Token()), list)
	r2 := rawPost(t, hc, b.URL(), b.Token(), rawSession(t, hc, b.URL(), b.Token()), list)
	s1, s2 := rawToolSchemas(t, r1.body), rawToolSchemas(t, r2.body)
	if len(s1) == 0 || mustJSON(s1) != mustJSON(s2) {
		t.Fatalf("schemas differ across hops:\n%v\n%v", s1, s2)
	}
	// Restart reconnects (a new session) and keeps working.
	if err := src.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if text, _ := call(t, c, "echo", map[string]any{"text": "again"}); text != "again" {
		t.Fatalf("echo after reconnect = %q", text)
	}
	// The upstream going away is a clear not-running error.
	if err := f.srv.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	text, isErr := call(t, c, "echo", map[string]any{"text": "x"})
	if !isErr || !strings.Contains(text, "tool server 'remote' is not reachable") {
		t.Fatalf("call with the upstream gone = %q (isError %v)", text, isErr)
	}
	if _, err := src.Call(testCtx(t), "echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Call with the upstream gone: %v, want ErrNotRunning", err)
	}
}

func TestHTTPSourceBadToken(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	src := NewHTTPSource(HTTPSpec{Name: "remote", URL: f.srv.URL(),
		Headers: map[string]string{"Authorization": "Bearer wrong"}}, testLog())
	t.Cleanup(func() { src.Close(testCtx(t)) })
	err := src.Start(testCtx(t))
	if err == nil || !strings.Contains(err.Error(), "connect to tool server 'remote'") {
		t.Fatalf("Start with a wrong token: %v", err)
	}
	if _, err := src.Tools(testCtx(t)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Tools when not connected: %v", err)
	}
}
