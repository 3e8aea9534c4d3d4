package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/testharness/mcptools"
)

var servedTools = []string{"add", "count", "crash", "echo", "env_read_file", "fancy", "slow", "stats"}

func TestListAndCallThroughBridge(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	if !strings.HasPrefix(f.srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(f.srv.URL(), "/mcp") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT/mcp", f.srv.URL())
	}
	c := connect(t, f.srv.URL(), f.srv.Token())
	if got := toolNames(t, c); !slices.Equal(got, servedTools) {
		t.Fatalf("tools = %v, want %v", got, servedTools)
	}
	if text, isErr := call(t, c, "add", map[string]any{"a": 2, "b": 3}); text != "5" || isErr {
		t.Fatalf("add(2,3) = %q (isError %v), want 5", text, isErr)
	}
	if text, _ := call(t, c, "echo", map[string]any{"text": "héllo ✓"}); text != "héllo ✓" {
		t.Fatalf("echo = %q", text)
	}
}

func TestRenamedToolAnswersToServedNameOnly(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	c := connect(t, f.srv.URL(), f.srv.Token())
	if text, isErr := call(t, c, "env_read_file", map[string]any{"path": "a.py"}); text != "contents of a.py" || isErr {
		t.Fatalf("env_read_file = %q (isError %v)", text, isErr)
	}
	_, err := callErr(testCtx(t), c, "read_file", map[string]any{"path": "a.py"})
	if err == nil || !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("read_file through the bridge: %v, want tool not found (-32602)", err)
	}
	// The daemon can use either name.
	for _, name := range []string{"read_file", "env_read_file"} {
		res, err := f.cat.Call(testCtx(t), name, json.RawMessage(`{"path":"b.py"}`))
		if err != nil || resultText(res) != "contents of b.py" {
			t.Fatalf("Catalog.Call(%s) = %q, %v", name, resultText(res), err)
		}
	}
	// The source itself is untouched: it still lists read_file.
	tools, err := f.tools.Tools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools, func(tl Tool) bool { return tl.Name == "read_file" }) {
		t.Fatal("the source no longer lists read_file")
	}
}

func TestHiddenTool(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	c := connect(t, f.srv.URL(), f.srv.Token())
	if names := toolNames(t, c); slices.Contains(names, "grade") {
		t.Fatalf("hidden tool listed: %v", names)
	}
	_, err := callErr(testCtx(t), c, "grade", map[string]any{"answer": "x"})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("hidden tool called through the bridge: %v, want not found", err)
	}
	e, ok := f.cat.Lookup("grade")
	if !ok || !e.Hidden || e.Source != "grader" {
		t.Fatalf("Lookup(grade) = %+v, %v", e, ok)
	}
	if slices.ContainsFunc(f.cat.Served(), func(e Entry) bool { return e.Upstream == "grade" }) {
		t.Fatal("Served() includes the hidden tool")
	}
	res, err := f.cat.Call(testCtx(t), "grade", json.RawMessage(`{"answer":"42"}`))
	if err != nil {
		t.Fatalf("Catalog.Call(grade): %v", err)
	}
	var score struct{ Score float64 }
	if err := json.Unmarshal([]byte(resultText(res)), &score); err != nil || score.Score != 0.75 {
		t.Fatalf("grade = %q (%v), want score 0.75", resultText(res), err)
	}
	res, err = f.cat.Call(testCtx(t), "grade", json.RawMessage(`{"answer":"42","expected":"42"}`))
	if err != nil || resultText(res) != `{"score":1}` {
		t.Fatalf("grade with expected = %q, %v", resultText(res), err)
	}
}

// TestSchemasByteForByte compares the raw tools/list of the upstream (spoken
// to by hand over its pipes) with the raw tools/list through the bridge.
func TestSchemasByteForByte(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	direct := rawToolSchemas(t, directList(t, f.sup))
	r := rawPost(t, httpClient(t), f.srv.URL(), f.srv.Token(), rawSession(t, httpClient(t), f.srv.URL(), f.srv.Token()),
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r.status != http.StatusOK {
		t.Fatalf("tools/list: %d %s", r.status, r.body)
	}
	bridged := rawToolSchemas(t, r.body)
	if len(bridged) != len(servedTools) {
		t.Fatalf("bridged %d tools, want %d", len(bridged), len(servedTools))
	}
	for served, got := range bridged {
		upstream := strings.TrimPrefix(served, "env_")
		want, ok := direct[upstream]
		if !ok {
			t.Fatalf("bridged tool %s has no upstream %s", served, upstream)
		}
		if got != want {
			t.Errorf("%s schemas differ:\nbridge:   %s\nupstream: %s", served, got, want)
		}
	}
	fancy := bridged["fancy"]
	if fancy[0] != mcptools.FancyInputSchema || fancy[1] != mcptools.FancyOutputSchema {
		t.Fatalf("fancy schemas changed:\n%s\n%s", fancy[0], fancy[1])
	}
	for _, kw := range []string{`"$schema"`, `"title"`, `"oneOf"`, `"$defs"`, `"$ref"`, `"additionalProperties"`} {
		if !strings.Contains(fancy[0], kw) {
			t.Errorf("fancy input schema lost %s", kw)
		}
	}
}

// directList runs a fresh upstream and lists its tools by hand, returning
// the raw tools/list response line.
func directList(t *testing.T, sup *process.Supervisor) []byte {
	t.Helper()
	spec := toolsSpec(t, "direct", "--omit", "grade")
	p, err := sup.Start(process.Spec{Name: "direct", Path: spec.Command[0], Args: spec.Command[1:],
		Env: process.DefaultEnviron(nil), Stdio: process.StdioRaw, Logger: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	ctx := testCtx(t)
	for _, line := range []string{initializeBody, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`} {
		if err := p.WriteLine(ctx, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReaderSize(p.Stdout(), 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading upstream: %v", err)
		}
		if strings.Contains(string(line), `"id":"list"`) {
			return line
		}
	}
}

func TestArgumentsPassThroughExactly(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	c := connect(t, f.srv.URL(), f.srv.Token())
	// 2^53+1 does not survive a float64 round trip.
	args := `{"shape":{"x":9007199254740993,"y":-0.5},"label":"ünïcode <&>"}`
	res, err := callErr(testCtx(t), c, "fancy", json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	// fancy returns the raw argument bytes it received (compacted JSON,
	// which encoding/json also HTML-escapes on the way).
	var got, want any
	dec := json.NewDecoder(strings.NewReader(resultText(res)))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("fancy text %q: %v", resultText(res), err)
	}
	dec = json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	dec.Decode(&want)
	if mustJSON(got) != mustJSON(want) || !strings.Contains(resultText(res), "9007199254740993") {
		t.Fatalf("upstream received %s, sent %s", resultText(res), args)
	}
	if res.StructuredContent == nil {
		t.Fatal("structured content was lost")
	}
}

func TestOnCallOnResult(t *testing.T) {
	var rec recorder
	f := newFixture(t, rec.opts())
	c := connect(t, f.srv.URL(), f.srv.Token())
	call(t, c, "env_read_file", json.RawMessage(`{"path":"a.py"}`))
	if _, isErr := call(t, c, "add", map[string]any{"a": "not a number"}); !isErr {
		t.Fatal("add with a bad argument did not fail")
	}
	starts, ends := rec.snapshot()
	if len(starts) != 2 || len(ends) != 2 {
		t.Fatalf("%d starts, %d ends, want 2 each", len(starts), len(ends))
	}
	s, e := starts[0], ends[0]
	if s.Served != "env_read_file" || s.Upstream != "read_file" || s.Source != "tools" ||
		string(s.Arguments) != `{"path":"a.py"}` || s.ID == "" || s.Time.IsZero() {
		t.Fatalf("CallStart = %+v", s)
	}
	if e.CallStart.ID != s.ID || e.Served != s.Served || e.Err != nil || resultText(e.Result) != "contents of a.py" ||
		e.Result.IsError || e.Duration <= 0 {
		t.Fatalf("CallEnd = %+v", e)
	}
	// A tool's own failure is an error result, not a bridge error.
	if e := ends[1]; e.Served != "add" || e.Err != nil || !e.Result.IsError || starts[1].ID == s.ID {
		t.Fatalf("CallEnd for a failing tool = %+v", e)
	}
}

func TestConcurrentClients(t *testing.T) {
	var rec recorder
	f := newFixture(t, rec.opts())
	const clients, calls = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, clients*calls)
	for i := range clients {
		c := connect(t, f.srv.URL(), f.srv.Token())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range calls {
				res, err := callErr(testCtx(t), c, "add", map[string]any{"a": i * 1000, "b": k})
				if err != nil {
					errs <- err
					return
				}
				if got, want := resultText(res), strconv.Itoa(i*1000+k); got != want {
					errs <- fmt.Errorf("client %d: add = %q, want %s", i, got, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	starts, ends := rec.snapshot()
	ids := map[string]bool{}
	for _, s := range starts {
		ids[s.ID] = true
	}
	if len(starts) != clients*calls || len(ends) != clients*calls || len(ids) != clients*calls {
		t.Fatalf("%d starts, %d ends, %d ids; want %d", len(starts), len(ends), len(ids), clients*calls)
	}
}

func TestCallTimeoutKeepsBridgeUsable(t *testing.T) {
	var rec recorder
	opts := rec.opts()
	opts.CallTimeout = 500 * time.Millisecond
	f := newFixture(t, opts)
	c := connect(t, f.srv.URL(), f.srv.Token())
	text, isErr := call(t, c, "slow", map[string]any{"seconds": 300})
	if !isErr || !strings.Contains(text, "timed out") {
		t.Fatalf("slow past the timeout = %q (isError %v), want a timeout error result", text, isErr)
	}
	_, ends := rec.snapshot()
	if len(ends) != 1 || !errors.Is(ends[0].Err, ErrTimeout) {
		t.Fatalf("OnResult = %+v, want ErrTimeout", ends)
	}
	if text, _ := call(t, c, "echo", map[string]any{"text": "after"}); text != "after" {
		t.Fatalf("echo after a timeout = %q", text)
	}
	// The upstream saw the cancellation (notifications/cancelled).
	waitStats(t, f.cat, func(s mcptools.Stats) bool { return s.Cancelled == 1 })
}

// waitStats polls the upstream's stats tool (daemon path) until ok holds.
func waitStats(t *testing.T, cat *Catalog, ok func(mcptools.Stats) bool) mcptools.Stats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := cat.Call(testCtx(t), "stats", nil)
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		var s mcptools.Stats
		if err := json.Unmarshal([]byte(resultText(res)), &s); err != nil {
			t.Fatalf("stats %q: %v", resultText(res), err)
		}
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream stats never satisfied the condition: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCancellationReachesUpstream(t *testing.T) {
	started := make(chan struct{}, 1)
	var rec recorder
	opts := rec.opts()
	onCall := opts.OnCall
	opts.OnCall = func(s CallStart) {
		onCall(s)
		started <- struct{}{}
	}
	f := newFixture(t, opts)
	c := connect(t, f.srv.URL(), f.srv.Token())
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := callErr(ctx, c, "slow", map[string]any{"seconds": 300})
		done <- err
	}()
	<-started
	waitStats(t, f.cat, func(s mcptools.Stats) bool { return s.Calls["slow"] == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call succeeded")
	}
	waitStats(t, f.cat, func(s mcptools.Stats) bool { return s.Cancelled == 1 })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ends := rec.snapshot(); len(ends) == 1 {
			if !errors.Is(ends[0].Err, context.Canceled) {
				t.Fatalf("OnResult Err = %v, want context.Canceled", ends[0].Err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("OnResult never fired for the cancelled call")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProgressPassesThrough(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	c := connect(t, f.srv.URL(), f.srv.Token())
	var mu sync.Mutex
	var got []map[string]any
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			got = append(got, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "slow"
	req.Params.Arguments = map[string]any{"seconds": 0.6, "steps": 3}
	req.Params.Meta = &mcp.Meta{ProgressToken: "my-token"}
	res, err := c.CallTool(testCtx(t), req)
	if err != nil || res.IsError {
		t.Fatalf("slow: %v %q", err, resultText(res))
	}
	mu.Lock()
	defer mu.Unlock()
	// Best effort (see the package doc): the notifications sent before the
	// last step arrive before the response; the last may not.
	if len(got) < 1 {
		t.Fatal("no progress notification reached the client")
	}
	for _, p := range got {
		if p["progressToken"] != "my-token" || p["total"] != float64(3) {
			t.Fatalf("progress = %v, want the client's token and total 3", p)
		}
	}
}

func TestServeRejectsNilCatalog(t *testing.T) {
	if _, err := Serve(nil, ServerOptions{}); err == nil {
		t.Fatal("Serve(nil) succeeded")
	}
}

func TestCloseCancelsCallsInFlight(t *testing.T) {
	started := make(chan struct{}, 1)
	ended := make(chan CallEnd, 1)
	f := newFixture(t, ServerOptions{
		OnCall:   func(CallStart) { started <- struct{}{} },
		OnResult: func(e CallEnd) { ended <- e },
	})
	c := connect(t, f.srv.URL(), f.srv.Token())
	done := make(chan error, 1)
	go func() {
		_, err := callErr(testCtx(t), c, "slow", map[string]any{"seconds": 300})
		done <- err
	}()
	<-started
	waitStats(t, f.cat, func(s mcptools.Stats) bool { return s.Calls["slow"] == 1 })
	// Close does not wait for the 300 s call: it cancels it.
	if err := f.srv.Close(testCtx(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if e := <-ended; !errors.Is(e.Err, context.Canceled) {
		t.Fatalf("OnResult Err = %v, want context.Canceled", e.Err)
	}
	if err := <-done; err == nil {
		t.Fatal("the call in flight succeeded after Close")
	}
	// The upstream saw the cancellation and is still usable by the daemon.
	waitStats(t, f.cat, func(s mcptools.Stats) bool { return s.Cancelled == 1 })
}

// TestSchemaNormalisation pins what "byte for byte" means for an upstream
// that pretty-prints: key order, keywords and values are kept; whitespace is
// compacted and <, >, & are escaped, as encoding/json does.
func TestSchemaNormalisation(t *testing.T) {
	schema := "{\n  \"type\": \"object\",\n  \"description\": \"a <b> & c\",\n  \"zeta\": {\"oneOf\": [1, \"x\"]},\n  \"alpha\": 2\n}"
	src := NewGoSource("go", GoTool{Tool: Tool{Name: "pretty", InputSchema: json.RawMessage(schema)}})
	srv := serve(t, newCatalog(t, CatalogOptions{}, src), ServerOptions{})
	hc := httpClient(t)
	r := rawPost(t, hc, srv.URL(), srv.Token(), rawSession(t, hc, srv.URL(), srv.Token()), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var compact, want bytes.Buffer
	if err := json.Compact(&compact, []byte(schema)); err != nil {
		t.Fatal(err)
	}
	json.HTMLEscape(&want, compact.Bytes())
	if got := rawToolSchemas(t, r.body)["pretty"][0]; got != want.String() {
		t.Fatalf("served schema\n%s\nwant\n%s", got, want.String())
	}
}
