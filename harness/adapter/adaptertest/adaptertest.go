// Package adaptertest holds what the adapters' tests share: a Launch with a
// real process supervisor and private directories, a probe of the harnessd
// variables a harness receives, an event collector, a liveness check by
// pid, a bearer-checking MCP server over real HTTP, and a check that a
// turn's events are emitted while it runs (LiveTurn).
// It is imported by tests only.
package adaptertest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Launch returns a launch of command with a supervisor (closed at cleanup),
// one temporary directory as workspace and HOME, the default environment
// and test-sized limits.
func Launch(tb testing.TB, command ...string) *harness.Launch {
	tb.Helper()
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sup.Close(context.Background(), 0) })
	dir := tb.TempDir()
	return &harness.Launch{
		EpisodeID:      "ep-1",
		Command:        command,
		Workspace:      dir,
		Home:           dir,
		Env:            process.DefaultEnviron(nil),
		StartupTimeout: 10 * time.Second,
		StopGrace:      time.Second,
		MaxLineBytes:   1 << 20,
		Supervisor:     sup,
	}
}

// EnvProbe returns a message for the test agent (testharness agent, any
// protocol) that makes it print the harnessd variables every adapter gives
// its harness, with its env directive, and the lines it prints when it got
// l's values.
func EnvProbe(l *harness.Launch) (msg string, want []string) {
	return "env HARNESSD_EPISODE_ID;;env HARNESSD_WORKSPACE",
		[]string{"HARNESSD_EPISODE_ID=" + l.EpisodeID, "HARNESSD_WORKSPACE=" + l.Workspace}
}

// CheckEnv fails tb unless text, what the harness said in answer to
// EnvProbe(l), holds every wanted line.
func CheckEnv(tb testing.TB, l *harness.Launch, text string) {
	tb.Helper()
	_, want := EnvProbe(l)
	for _, w := range want {
		if !strings.Contains(text, w) {
			tb.Errorf("the harness did not get %s; it said %q", w, text)
		}
	}
}

// Events collects a turn's events; it is safe for concurrent use.
type Events struct {
	mu     sync.Mutex
	events []wire.Event
}

// Emit records e (pass it as a turn's emit function).
func (c *Events) Emit(e wire.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

// All returns the events so far.
func (c *Events) All() []wire.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wire.Event(nil), c.events...)
}

// Types returns the events' types in order.
func (c *Events) Types() []string {
	var out []string
	for _, e := range c.All() {
		out = append(out, string(e.Type))
	}
	return out
}

// OfType returns the events of type t.
func (c *Events) OfType(t wire.EventType) []wire.Event {
	var out []wire.Event
	for _, e := range c.All() {
		if e.Type == t {
			out = append(out, e)
		}
	}
	return out
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z' && b[i+2] != 'X'
}

// MCPServer is a streamable-HTTP MCP server on 127.0.0.1 with one tool,
// add(a, b), that answers only requests carrying its bearer token.
type MCPServer struct {
	// URL is the server's endpoint.
	URL   string
	token string

	mu    sync.Mutex
	auth  []string              // Authorization headers seen
	calls []mcp.CallToolRequest // add calls received
}

// NewMCPServer starts the server; it stops at cleanup.
func NewMCPServer(tb testing.TB, token string) *MCPServer {
	tb.Helper()
	ms := &MCPServer{token: token}
	srv := server.NewMCPServer("t", "1")
	srv.AddTool(mcp.NewTool("add", mcp.WithNumber("a"), mcp.WithNumber("b")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ms.mu.Lock()
			ms.calls = append(ms.calls, req)
			ms.mu.Unlock()
			return mcp.NewToolResultText(fmt.Sprint(req.GetFloat("a", 0) + req.GetFloat("b", 0))), nil
		})
	h := server.NewStreamableHTTPServer(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms.mu.Lock()
		ms.auth = append(ms.auth, r.Header.Get("Authorization"))
		ms.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Shutdown(ctx)
		hs.Close()
		<-done
	})
	ms.URL = "http://" + ln.Addr().String() + "/mcp"
	return ms
}

// Injection describes the server to an adapter as the bridge would.
func (ms *MCPServer) Injection() *harness.MCPInjection {
	return &harness.MCPInjection{ServerName: "env", URL: ms.URL, Token: ms.token}
}

// Auth returns the Authorization headers of every request so far.
func (ms *MCPServer) Auth() []string {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]string(nil), ms.auth...)
}

// Calls returns the add calls received so far.
func (ms *MCPServer) Calls() []mcp.CallToolRequest {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return append([]mcp.CallToolRequest(nil), ms.calls...)
}

// Data returns e's data as it appears on the wire, decoded into plain JSON
// values (numbers are float64), so that tests check what clients receive.
func Data(tb testing.TB, e wire.Event) map[string]any {
	tb.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		tb.Fatalf("event %v does not encode: %v", e, err)
	}
	var w struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		tb.Fatalf("event %s does not decode: %v", b, err)
	}
	return w.Data
}

// LiveTurn runs turn 1 of a with a message that makes the
// test agent (any protocol) say "first", then wait for a file, then say
// "last", and fails tb unless an event saying "first" (a text_output or an
// llm_chunk) is emitted while the turn runs: the file is created only once
// that event was seen, so the turn cannot end before. It returns the turn's
// result.
func LiveTurn(tb testing.TB, a harness.Adapter) harness.TurnResult {
	tb.Helper()
	gate := tb.TempDir() + "/gate"
	seen := make(chan struct{})
	var once sync.Once
	emit := func(e wire.Event) {
		var said string
		switch d := e.Data.(type) {
		case *wire.TextOutput:
			said = d.Text
		case *wire.LLMChunk:
			said = d.Content
		}
		for _, l := range strings.Split(said, "\n") {
			if strings.TrimSpace(l) == "first" {
				once.Do(func() { close(seen) })
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		res harness.TurnResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "reply first;;waitfor " + gate + ";;reply last", OutputLimit: 1 << 20}, emit)
		done <- result{res, err}
	}()
	select {
	case <-seen:
	case r := <-done:
		tb.Fatalf("the turn ended (%+v, %v) before an event said its first line", r.res, r.err)
	case <-ctx.Done():
		tb.Fatal("no event said the turn's first line within 60 s")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		tb.Fatalf("the turn: %v", r.err)
	}
	if !strings.Contains(r.res.Response, "last") {
		tb.Errorf("the turn's response %q does not end with its last line", r.res.Response)
	}
	return r.res
}

// WarnCounter is a slog.Handler counting the records of level Warn and
// above: those written in full, by message, and the summaries of an
// adapterkit.LogLimit with the records they say were not written (their
// "suppressed" attribute). Its zero value is ready; it is safe for
// concurrent use.
type WarnCounter struct {
	mu         sync.Mutex
	full       map[string]int
	summaries  int
	suppressed int64
}

// Enabled reports every level as enabled.
func (h *WarnCounter) Enabled(context.Context, slog.Level) bool { return true }

// Handle counts r.
func (h *WarnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	summary := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "suppressed" {
			h.suppressed += a.Value.Int64()
			summary = true
		}
		return true
	})
	if summary {
		h.summaries++
	} else {
		if h.full == nil {
			h.full = map[string]int{}
		}
		h.full[r.Message]++
	}
	return nil
}

// WithAttrs returns h: attributes are not counted.
func (h *WarnCounter) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup returns h.
func (h *WarnCounter) WithGroup(string) slog.Handler { return h }

// Counts returns the records written (in full and summaries), those
// written in full, those the summaries say were not written, and the kinds
// (messages) written in full.
func (h *WarnCounter) Counts() (records int, logged, suppressed int64, kinds int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.full {
		logged += int64(n)
	}
	return int(logged) + h.summaries, logged, h.suppressed, len(h.full)
}

// Kinds returns how many records of each message were written in full.
func (h *WarnCounter) Kinds() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.full)
}
