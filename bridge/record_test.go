package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/wire"
)

// countingTools is a Go source of add and echo that counts the calls that
// reach it.
func countingTools(t *testing.T, calls *atomic.Int64) Source {
	t.Helper()
	add, err := ToolFromMCP(mcp.NewTool("add", mcp.WithNumber("a"), mcp.WithNumber("b")))
	if err != nil {
		t.Fatal(err)
	}
	echo, err := ToolFromMCP(mcp.NewTool("echo", mcp.WithString("text")))
	if err != nil {
		t.Fatal(err)
	}
	return NewGoSource("counted",
		GoTool{Tool: add, Handler: func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
			calls.Add(1)
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(strconv.FormatFloat(in.A+in.B, 'f', -1, 64)), nil
		}},
		GoTool{Tool: echo, Handler: func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
			calls.Add(1)
			var in struct{ Text string }
			json.Unmarshal(args, &in)
			return mcp.NewToolResultText(in.Text), nil
		}})
}

// divergences collects OnDivergence reports.
type divergences struct {
	mu  sync.Mutex
	all []wire.Divergence
}

func (d *divergences) add(v wire.Divergence) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.all = append(d.all, v)
}

func (d *divergences) list() []wire.Divergence {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]wire.Divergence(nil), d.all...)
}

// recordThree serves a recording bridge, makes three calls through a real
// MCP client and returns the records.
func recordThree(t *testing.T, cat *Catalog) []ToolRecord {
	t.Helper()
	srv := serve(t, cat, ServerOptions{Record: true})
	c := connect(t, srv.URL(), srv.Token())
	for _, tc := range []struct {
		name string
		args any
		want string
	}{{"add", map[string]any{"a": 2, "b": 3}, "5"}, {"echo", map[string]any{"text": "hi"}, "hi"}, {"add", map[string]any{"a": 1, "b": 1}, "2"}} {
		if text, isErr := call(t, c, tc.name, tc.args); text != tc.want || isErr {
			t.Fatalf("%s: %q (error %v)", tc.name, text, isErr)
		}
	}
	recs, err := srv.Records()
	if err != nil || len(recs) != 3 || recs[1].Served != "echo" || resultText(recs[1].Result) != "hi" {
		t.Fatalf("records: %v %+v", err, recs)
	}
	return recs
}

// TestReplayAnswersFromRecord: a bridge replaying three recorded calls
// answers them as recorded without the tool running (counted at the tool),
// matching arguments as decoded JSON (another key order and spacing is the
// same call); its OnCall says Replayed; once the record is used up the
// next call reaches the tool. Its own record holds the replayed calls too.
func TestReplayAnswersFromRecord(t *testing.T) {
	var calls atomic.Int64
	cat := newCatalog(t, CatalogOptions{}, countingTools(t, &calls))
	recs := recordThree(t, cat)
	if calls.Load() != 3 {
		t.Fatalf("%d calls reached the tools while recording", calls.Load())
	}

	var mu sync.Mutex
	var replayed []bool
	var divs divergences
	srv := serve(t, cat, ServerOptions{Record: true, Replay: recs, OnDivergence: divs.add,
		OnCall: func(s CallStart) { mu.Lock(); replayed = append(replayed, s.Replayed); mu.Unlock() }})
	c := connect(t, srv.URL(), srv.Token())
	for i, tc := range []struct {
		name string
		args any
		want string
	}{{"add", json.RawMessage(`{ "b": 3.0, "a": 2 }`), "5"}, {"echo", map[string]any{"text": "hi"}, "hi"}, {"add", map[string]any{"b": 1, "a": 1}, "2"}} {
		if !srv.Replaying() {
			t.Fatalf("not replaying before call %d", i+1)
		}
		if text, isErr := call(t, c, tc.name, tc.args); text != tc.want || isErr {
			t.Fatalf("replayed %s: %q (error %v)", tc.name, text, isErr)
		}
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("the replay ran the tools %d times", n-3)
	}
	if srv.Replaying() || srv.Diverged() != nil || len(divs.list()) != 0 {
		t.Fatalf("after the record: replaying %v, diverged %v", srv.Replaying(), srv.Diverged())
	}
	if text, _ := call(t, c, "add", map[string]any{"a": 4, "b": 4}); text != "8" || calls.Load() != 4 {
		t.Fatalf("the call after the record: %q, %d tool calls", text, calls.Load())
	}
	mu.Lock()
	got := append([]bool(nil), replayed...)
	mu.Unlock()
	if len(got) != 4 || !got[0] || !got[1] || !got[2] || got[3] {
		t.Errorf("OnCall's Replayed: %v, want three true then false", got)
	}
	if own, err := srv.Records(); err != nil || len(own) != 4 {
		t.Errorf("the replaying bridge's record: %d calls, %v", len(own), err)
	}
}

// TestReplayDivergence: a call with other arguments, or another tool,
// than the recorded one diverges: an error result, OnDivergence once with
// the call's place and what differed, Diverged, and no later call answered
// (from the record or by the tool). The positive control is
// TestReplayAnswersFromRecord's identical calls.
func TestReplayDivergence(t *testing.T) {
	var calls atomic.Int64
	cat := newCatalog(t, CatalogOptions{}, countingTools(t, &calls))
	recs := recordThree(t, cat)
	for _, tc := range []struct {
		name  string
		args  any
		field string
	}{{"echo", map[string]any{"text": "bye"}, "arguments"}, {"add", map[string]any{"a": 2, "b": 3}, "name"}} {
		t.Run(tc.field, func(t *testing.T) {
			before := calls.Load()
			var divs divergences
			srv := serve(t, cat, ServerOptions{Replay: recs, OnDivergence: divs.add})
			c := connect(t, srv.URL(), srv.Token())
			if text, isErr := call(t, c, "add", map[string]any{"a": 2, "b": 3}); text != "5" || isErr {
				t.Fatalf("call 1: %q", text)
			}
			text, isErr := call(t, c, tc.name, tc.args)
			if !isErr || !strings.Contains(text, "diverged") {
				t.Fatalf("the diverging call: %q (error %v)", text, isErr)
			}
			d, all := srv.Diverged(), divs.list()
			if d == nil || len(all) != 1 || d.Door != wire.DoorTool || d.Index != 2 || d.Field != tc.field || d.Want == "" || d.Got == "" {
				t.Fatalf("divergence %+v, reported %v", d, all)
			}
			if text, isErr := call(t, c, "add", map[string]any{"a": 1, "b": 1}); !isErr || !strings.Contains(text, "diverged") {
				t.Errorf("a call after the divergence: %q (error %v)", text, isErr)
			}
			if srv.Replaying() || calls.Load() != before {
				t.Errorf("after the divergence: replaying %v, %d tool calls", srv.Replaying(), calls.Load()-before)
			}
			t.Logf("divergence: %v", d)
		})
	}
}

// TestRecordBounded: past MaxRecordBytes the record keeps what it had and
// Records says ErrRecordFull; without Record, Records says ErrNotRecording.
func TestRecordBounded(t *testing.T) {
	var calls atomic.Int64
	cat := newCatalog(t, CatalogOptions{}, countingTools(t, &calls))
	srv := serve(t, cat, ServerOptions{Record: true, MaxRecordBytes: 1500}) // two calls, each ~450 bytes of JSON and 256 of objects
	c := connect(t, srv.URL(), srv.Token())
	for range 4 {
		call(t, c, "echo", map[string]any{"text": strings.Repeat("x", 200)})
	}
	recs, err := srv.Records()
	if !errors.Is(err, ErrRecordFull) || len(recs) == 0 || len(recs) >= 4 || !strings.Contains(err.Error(), "MaxRecordBytes") {
		t.Fatalf("records over the bound: %d, %v", len(recs), err)
	}
	off := serve(t, cat, ServerOptions{})
	if _, err := off.Records(); !errors.Is(err, ErrNotRecording) {
		t.Fatalf("records without Record: %v", err)
	}
}

// TestReplayOutOfOrderAndEnd: parallel tool calls may reach a fork's
// bridge in another order than recorded: within ReplayWindow each gets its
// own recorded result, without the tool; with a window of 1 (strict order)
// the same calls diverge (the control). EndReplay with records left is a
// divergence of field "calls"; with none left it is nil.
func TestReplayOutOfOrderAndEnd(t *testing.T) {
	var calls atomic.Int64
	cat := newCatalog(t, CatalogOptions{}, countingTools(t, &calls))
	recs := recordThree(t, cat)

	srv := serve(t, cat, ServerOptions{Replay: recs})
	c := connect(t, srv.URL(), srv.Token())
	for _, tc := range []struct {
		name string
		args any
		want string
	}{{"echo", map[string]any{"text": "hi"}, "hi"}, {"add", map[string]any{"a": 1, "b": 1}, "2"}, {"add", map[string]any{"a": 2, "b": 3}, "5"}} {
		if text, isErr := call(t, c, tc.name, tc.args); text != tc.want || isErr {
			t.Fatalf("%s out of order: %q (error %v)", tc.name, text, isErr)
		}
	}
	if calls.Load() != 3 || srv.Replaying() || srv.EndReplay() != nil {
		t.Fatalf("after the record: %d tool calls, replaying %v", calls.Load()-3, srv.Replaying())
	}

	strict := serve(t, cat, ServerOptions{Replay: recs, ReplayWindow: 1})
	sc := connect(t, strict.URL(), strict.Token())
	if text, isErr := call(t, sc, "echo", map[string]any{"text": "hi"}); !isErr || strict.Diverged() == nil {
		t.Fatalf("out of order with a window of 1: %q (error %v)", text, isErr)
	}

	var divs divergences
	short := serve(t, cat, ServerOptions{Replay: recs, OnDivergence: divs.add})
	shc := connect(t, short.URL(), short.Token())
	call(t, shc, "add", map[string]any{"a": 2, "b": 3})
	d := short.EndReplay()
	if d == nil || d.Field != "calls" || d.Index != 2 || len(divs.list()) != 1 || short.Replaying() {
		t.Fatalf("ending with two records left: %+v, reported %v", d, divs.list())
	}
	if text, isErr := call(t, shc, "add", map[string]any{"a": 1, "b": 1}); !isErr || calls.Load() != 3 {
		t.Fatalf("a call after a failed replay: %q (error %v)", text, isErr)
	}
}
