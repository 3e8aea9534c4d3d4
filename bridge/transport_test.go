package bridge

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

func TestListensOnLoopbackOnly(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	host, portStr, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(f.srv.URL(), "http://"), "/mcp"))
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("URL host %q (%v), want 127.0.0.1", host, err)
	}
	port, _ := strconv.Atoi(portStr)
	// Every listening socket on the port is bound to 127.0.0.1; none is IPv6.
	found := 0
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, l := range listeners(t, file) {
			if l.port != port {
				continue
			}
			found++
			if file != "/proc/net/tcp" || l.addr != "0100007F" {
				t.Errorf("%s: listener on port %d bound to %s", file, port, l.addr)
			}
		}
	}
	if found != 1 {
		t.Fatalf("found %d listening sockets on port %d, want 1", found, port)
	}
	// Bound to loopback only (checked above from the kernel's own table), so
	// no other address of this host reaches it; the test sends nothing to
	// the machine's external addresses.
}

type listener struct {
	addr string
	port int
}

// listeners parses the LISTEN sockets of /proc/net/tcp{,6}.
func listeners(t *testing.T, file string) []listener {
	b, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		t.Fatal(err)
	}
	var out []listener
	for _, line := range strings.Split(string(b), "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) < 4 || fields[3] != "0A" {
			continue
		}
		addr, port, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		p, _ := strconv.ParseUint(port, 16, 16)
		out = append(out, listener{addr: addr, port: int(p)})
	}
	return out
}

func TestProtocolVersions(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			c := connect(t, f.srv.URL(), f.srv.Token(), client.WithProtocolVersion(v))
			if c.ProtocolVersion() != v {
				t.Fatalf("negotiated %q, want %q", c.ProtocolVersion(), v)
			}
			if got := toolNames(t, c); !slices.Equal(got, servedTools) {
				t.Fatalf("tools = %v", got)
			}
			if text, _ := call(t, c, "echo", map[string]any{"text": v}); text != v {
				t.Fatalf("echo = %q", text)
			}
		})
	}
}

func TestSessions(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	hc := httpClient(t)
	url, tok := f.srv.URL(), f.srv.Token()
	sid := rawSession(t, hc, url, tok)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if r := rawPost(t, hc, url, tok, sid, list); r.status != http.StatusOK {
		t.Fatalf("tools/list in session: %d %s", r.status, r.body)
	}
	if r := rawPost(t, hc, url, tok, "mcp-session-00000000-0000-4000-8000-000000000000", list); r.status != http.StatusNotFound {
		t.Fatalf("unknown session: %d, want 404", r.status)
	}
	// GET opens the session's stream; it is tolerated and ends with Close.
	getCtx, cancelGet := context.WithCancel(testCtx(t))
	defer cancelGet()
	req, _ := http.NewRequestWithContext(getCtx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	streamEnded := make(chan struct{})
	go func() {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		close(streamEnded)
	}()
	// DELETE ends the session.
	del, _ := http.NewRequestWithContext(testCtx(t), http.MethodDelete, url, nil)
	del.Header.Set("Authorization", "Bearer "+tok)
	del.Header.Set("Mcp-Session-Id", sid)
	del.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	dresp, err := hc.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", dresp.StatusCode)
	}
	if r := rawPost(t, hc, url, tok, sid, list); r.status != http.StatusNotFound {
		t.Fatalf("deleted session: %d, want 404", r.status)
	}
	// A second stream on a live session, then Close ends it.
	sid2 := rawSession(t, hc, url, tok)
	req2, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, url, nil)
	req2.Header = req.Header.Clone()
	req2.Header.Set("Mcp-Session-Id", sid2)
	resp2, err := hc.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	stream2Ended := make(chan struct{})
	go func() {
		io.Copy(io.Discard, resp2.Body)
		resp2.Body.Close()
		close(stream2Ended)
	}()
	if err := f.srv.Close(testCtx(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-stream2Ended
	cancelGet()
	<-streamEnded
	if err := f.srv.Close(testCtx(t)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := hc.Get(url); err == nil {
		t.Fatal("closed server still accepts connections")
	}
}

func TestBodyLimit(t *testing.T) {
	f := newFixture(t, ServerOptions{MaxBodyBytes: 1024})
	hc := httpClient(t)
	sid := rawSession(t, hc, f.srv.URL(), f.srv.Token())
	big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", 2000) + `"}}}`
	if r := rawPost(t, hc, f.srv.URL(), f.srv.Token(), sid, big); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d, want 413", r.status)
	}
	// Without a Content-Length (chunked) the limit holds as well.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(big))
		pw.Close()
	}()
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, f.srv.URL(), pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.srv.Token())
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized chunked body: %d, want 413", resp.StatusCode)
	}
	small := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}}}`
	if r := rawPost(t, hc, f.srv.URL(), f.srv.Token(), sid, small); r.status != http.StatusOK || !strings.Contains(string(r.body), `"ok"`) {
		t.Fatalf("small body after the limit: %d %s", r.status, r.body)
	}
}
