package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func connect(t *testing.T, o Options) *client.Client {
	t.Helper()
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t *testing.T, c *client.Client, name string, args any) (string, bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var parts []string
	for _, ct := range res.Content {
		if tc, ok := mcp.AsTextContent(ct); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

func names(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func TestSelection(t *testing.T) {
	want := []string{"add", "count", "crash", "echo", "fancy", "grade", "read_file", "slow", "stats"}
	if !slices.Equal(Names(), want) {
		t.Fatalf("Names() = %v", Names())
	}
	if got := names(t, connect(t, Options{})); !slices.Equal(got, want) {
		t.Fatalf("all tools = %v", got)
	}
	if got := names(t, connect(t, Options{Only: []string{"add", "echo"}})); !slices.Equal(got, []string{"add", "echo"}) {
		t.Fatalf("--only add,echo = %v", got)
	}
	if got := names(t, connect(t, Options{Omit: []string{"crash", "slow"}})); slices.Contains(got, "crash") || len(got) != len(want)-2 {
		t.Fatalf("--omit crash,slow = %v", got)
	}
	c := connect(t, Options{Only: []string{"add"}, Rename: map[string]string{"add": "plus"}})
	if got := names(t, c); !slices.Equal(got, []string{"plus"}) {
		t.Fatalf("renamed = %v", got)
	}
	if text, _ := call(t, c, "plus", map[string]any{"a": 1, "b": 2}); text != "3" {
		t.Fatalf("plus = %q", text)
	}
	for _, o := range []Options{{Only: []string{"nope"}}, {Omit: []string{"nope"}}, {Rename: map[string]string{"nope": "x"}}} {
		if _, err := NewServer(o); err == nil {
			t.Errorf("NewServer(%+v) accepted an unknown tool", o)
		}
	}
}

func TestTools(t *testing.T) {
	c := connect(t, Options{Score: 0.5})
	checks := []struct {
		name string
		args any
		want string
		err  bool
	}{
		{"add", map[string]any{"a": 2, "b": 3}, "5", false},
		{"add", map[string]any{"a": 0.5, "b": -2}, "-1.5", false},
		{"add", map[string]any{"a": 1}, "", true},
		{"echo", map[string]any{"text": "hi ✓"}, "hi ✓", false},
		{"read_file", map[string]any{"path": "a.py"}, "contents of a.py", false},
		{"grade", map[string]any{"answer": "x"}, `{"score":0.5}`, false},
		{"grade", map[string]any{"answer": " 42 ", "expected": "42"}, `{"score":1}`, false},
		{"grade", map[string]any{"answer": "41", "expected": "42"}, `{"score":0}`, false},
		{"count", nil, "1", false},
		{"count", nil, "2", false},
		{"fancy", json.RawMessage(`{"shape":"circle"}`), `{"shape":"circle"}`, false},
		{"slow", map[string]any{"seconds": 0.01}, "slept 0.01s", false},
	}
	for _, ck := range checks {
		text, isErr := call(t, c, ck.name, ck.args)
		if isErr != ck.err || (!ck.err && text != ck.want) {
			t.Errorf("%s(%v) = %q (isError %v), want %q (isError %v)", ck.name, ck.args, text, isErr, ck.want, ck.err)
		}
	}
	text, _ := call(t, c, "stats", nil)
	var s Stats
	if err := json.Unmarshal([]byte(text), &s); err != nil || s.PID != os.Getpid() || s.Count != 2 || s.Calls["add"] != 3 {
		t.Fatalf("stats = %q (%v)", text, err)
	}
}

func TestFancySchemaServedVerbatim(t *testing.T) {
	s, err := NewServer(Options{Only: []string{"fancy"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s.GetTool("fancy").Tool)
	if err != nil {
		t.Fatal(err)
	}
	var w struct{ InputSchema, OutputSchema json.RawMessage }
	json.Unmarshal(b, &w)
	if string(w.InputSchema) != FancyInputSchema || string(w.OutputSchema) != FancyOutputSchema {
		t.Fatalf("fancy schemas re-encoded:\n%s\n%s", w.InputSchema, w.OutputSchema)
	}
}

func TestSlowHonoursCancellationAndReportsProgress(t *testing.T) {
	c := connect(t, Options{})
	var mu sync.Mutex
	var progress []any
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields["progress"])
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "slow"
	req.Params.Arguments = map[string]any{"seconds": 0.03, "steps": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: "t"}
	if _, err := c.CallTool(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress = %v, want 3 notifications", progress)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req = mcp.CallToolRequest{}
	req.Params.Name = "slow"
	req.Params.Arguments = map[string]any{"seconds": 300}
	c.CallTool(ctx, req)
	for {
		text, _ := call(t, c, "stats", nil)
		var s Stats
		json.Unmarshal([]byte(text), &s)
		if s.Cancelled == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow never saw its cancellation: %s", text)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCrashExits(t *testing.T) {
	var code int
	var stderr bytes.Buffer
	c := connect(t, Options{Exit: func(c int) { code = c }, Stderr: &stderr})
	call(t, c, "crash", map[string]any{"code": 7})
	if code != 7 || !strings.Contains(stderr.String(), "crashing with code 7") {
		t.Fatalf("crash: code %d, stderr %q", code, stderr.String())
	}
	call(t, c, "crash", nil)
	if code != 3 {
		t.Fatalf("crash default code = %d, want 3", code)
	}
}

func TestPagination(t *testing.T) {
	c := connect(t, Options{PageSize: 2})
	res, err := c.ListToolsByPage(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 || res.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q", len(res.Tools), res.NextCursor)
	}
	if got := names(t, c); !slices.Equal(got, Names()) {
		t.Fatalf("all pages = %v", got)
	}
}
