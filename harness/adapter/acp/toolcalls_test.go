package acp

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/wire"
)

// TestToolCallTableStaysFlatOverTurns: the episode's tool call table
// dropped only finished calls, so an agent announcing calls it never
// completes grew it by every such call of every turn (50 turns of 1,000:
// 50,000 entries). A call without an update during the last turn is now
// dropped: the table holds at most two turns' calls. The control: a call
// of the last turn still finishes with its name, and one updated every
// turn stays.
func TestToolCallTableStaysFlatOverTurns(t *testing.T) {
	calls := map[string]*toolCall{}
	log := adapterkit.NewLogLimit(slog.New(slog.DiscardHandler))
	const turns, perTurn = 50, 1000
	title, pending, completed := "x", "pending", "completed"
	for n := range turns {
		ts := newTurnState(func(wire.Event) {}, log, "s", calls)
		ts.toolCall(&update{SessionUpdate: "tool_call_update", ToolCallID: "long", Title: &title, Status: &pending})
		for i := range perTurn {
			ts.toolCall(&update{SessionUpdate: "tool_call", ToolCallID: fmt.Sprintf("t%d-%d", n, i), Title: &title, Status: &pending})
		}
	}
	t.Logf("after %d turns of %d unfinished calls the table holds %d calls", turns, perTurn, len(calls))
	if len(calls) > 2*perTurn+1 {
		t.Fatalf("after %d turns of %d unfinished calls the episode's table holds %d calls", turns, perTurn, len(calls))
	}
	if calls["long"] == nil {
		t.Fatal("control: a call updated every turn was dropped")
	}
	var events []wire.Event
	ts := newTurnState(func(e wire.Event) { events = append(events, e) }, log, "s", calls)
	ts.toolCall(&update{SessionUpdate: "tool_call_update", ToolCallID: fmt.Sprintf("t%d-0", turns-1), Status: &completed})
	if len(events) != 1 || events[0].Type != wire.EventToolResult {
		t.Fatalf("control: the last turn's call finished as %v", events)
	}
}
