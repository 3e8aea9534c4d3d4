package bridge

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestReplayTellsApartIntegersFloat64CannotHold (an outside red team): a replaying bridge
// compares a call's arguments with the recorded ones as JSON decoded into
// float64 (sameArguments), so two integers past 2^53 that differ in their
// last digits are "the same call": a fork's sibling that asks for record
// 9007199254740993 is answered, as a faithful replay (Replayed, no
// divergence), with what its parent got for 9007199254740992. A tool server
// in Python (json.loads keeps ints exact) or Go with UseNumber sees two
// different calls. The control: arguments that float64 tells apart
// diverge.
func TestReplayTellsApartIntegersFloat64CannotHold(t *testing.T) {
	var calls atomic.Int64
	cat := newCatalog(t, CatalogOptions{}, countingTools(t, &calls))
	recs := []ToolRecord{{Served: "add", Arguments: json.RawMessage(`{"a": 9007199254740992, "b": 0}`),
		Result: mcp.NewToolResultText("the parent's answer for 9007199254740992")}}

	// Control: a visibly other number diverges.
	var ctl divergences
	srv := serve(t, cat, ServerOptions{Replay: recs, OnDivergence: ctl.add})
	c := connect(t, srv.URL(), srv.Token())
	if text, isErr := call(t, c, "add", json.RawMessage(`{"a": 9007199254740000, "b": 0}`)); !isErr || !strings.Contains(text, "diverged") {
		t.Fatalf("control: another number was answered %q (error %v)", text, isErr)
	}

	// Controls of the fix: 0 spelt 0.0 is the same call; the string
	// "9007199254740992" is not the number.
	for _, c := range []struct {
		args    string
		replays bool
	}{{`{"a": 9007199254740992, "b": 0.0}`, true}, {`{"a": "9007199254740992", "b": 0}`, false}} {
		var d divergences
		srv := serve(t, cat, ServerOptions{Replay: recs, OnDivergence: d.add})
		c2 := connect(t, srv.URL(), srv.Token())
		text, isErr := call(t, c2, "add", json.RawMessage(c.args))
		if replayed := !isErr && srv.Diverged() == nil; replayed != c.replays {
			t.Errorf("control %s: replayed %v (%q), want %v", c.args, replayed, text, c.replays)
		}
	}

	var divs divergences
	srv = serve(t, cat, ServerOptions{Replay: recs, OnDivergence: divs.add})
	c = connect(t, srv.URL(), srv.Token())
	text, isErr := call(t, c, "add", json.RawMessage(`{"a": 9007199254740993, "b": 0}`))
	if !isErr && srv.Diverged() == nil && len(divs.list()) == 0 {
		t.Fatalf("a call for 9007199254740993 was answered from the record of 9007199254740992 (%q) and reported as no divergence", text)
	}
}
