package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// mustTurn runs a turn that must succeed and returns its response.
func mustTurn(t *testing.T, a *Adapter, n int, msg string) string {
	t.Helper()
	res, _, err := turn(t, a, n, msg)
	if err != nil {
		t.Fatalf("turn %d %q: %v", n, msg, err)
	}
	return res.Response
}

func forkState(t *testing.T, a *Adapter) (*harness.ForkState, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.ForkState(ctx)
}

// A harness that answers fork hands its whole memory to a sibling: the
// sibling's next turn recalls the parent's remembered string, counts on
// from the parent's turns and holds its history; each goes on on its own.
func TestForkByLineProtocol(t *testing.T) {
	parent := started(t)
	if r := mustTurn(t, parent, 1, "remember the blue door;;count"); r != "remembered: the blue door\nturns: 1" {
		t.Fatalf("turn 1: %q", r)
	}
	if r := mustTurn(t, parent, 2, "count"); r != "turns: 2" {
		t.Fatalf("turn 2: %q", r)
	}
	fs, err := forkState(t, parent)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Mechanism != harness.ForkLine || !json.Valid(fs.Data) {
		t.Fatalf("fork state %+v", fs)
	}
	var st struct {
		Turns      int      `json:"turns"`
		History    []string `json:"history"`
		Remembered string   `json:"remembered"`
	}
	if err := json.Unmarshal(fs.Data, &st); err != nil || st.Turns != 2 || st.Remembered != "the blue door" || len(st.History) != 2 {
		t.Fatalf("state %s: %+v %v", fs.Data, st, err)
	}

	l := launch(t)
	l.Fork = fs
	sibling := New()
	if err := sibling.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sibling.Stop(context.Background()) })
	want := "recall: the blue door\nturns: 3\nhistory: remember the blue door;;count | count | recall;;count;;history"
	if r := mustTurn(t, sibling, 3, "recall;;count;;history"); r != want {
		t.Fatalf("sibling's turn 3: %q, want %q", r, want)
	}
	// The sibling's memory is its own from here; the parent goes on.
	mustTurn(t, sibling, 4, "remember the red door")
	if r := mustTurn(t, parent, 3, "recall;;count"); r != "recall: the blue door\nturns: 3" {
		t.Fatalf("parent's turn 3: %q", r)
	}
	if r := mustTurn(t, sibling, 5, "recall"); r != "recall: the red door" {
		t.Fatalf("sibling's turn 5: %q", r)
	}
}

// A harness that says nothing to fork cannot fork: ErrForkUnsupported after
// fork_timeout, and the harness goes on; a fork_state line it writes late is
// dropped, not taken as the next turn's output (without a fork request due,
// the same line is a protocol error).
func TestForkUnansweredIsUnsupported(t *testing.T) {
	l := launch(t, "--no-fork")
	l.Options = map[string]any{"fork_timeout": "300ms"}
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	mustTurn(t, a, 1, "remember x")
	begin := time.Now()
	_, err := forkState(t, a)
	if !errors.Is(err, harness.ErrForkUnsupported) || !strings.Contains(err.Error(), "did not answer fork within 300ms") {
		t.Fatalf("fork: %v", err)
	}
	if d := time.Since(begin); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("the fork took %s, want about the 300ms fork_timeout", d)
	}
	late := `rawline {"type":"fork_state","state":{"turns":99}};;count;;recall`
	if r := mustTurn(t, a, 2, late); r != "turns: 2\nrecall: x" {
		t.Fatalf("turn after the unanswered fork: %q", r)
	}
	// Positive control: with no fork request due, the line is not dropped.
	if _, _, err := turn(t, a, 3, late); failureType(t, err) != wire.FailureProtocol {
		t.Fatalf("a fork_state line without a request: %v, want protocol_error", err)
	}
}

// A harness that answers fork and restore with an error event (as one that
// does not know them does) cannot fork, at once, and goes on; started as a
// sibling it fails with startup_failed and its reason.
func TestForkRefused(t *testing.T) {
	a := started(t, "--fork-refuse")
	mustTurn(t, a, 1, "count")
	begin := time.Now()
	_, err := forkState(t, a)
	if !errors.Is(err, harness.ErrForkUnsupported) || !strings.Contains(err.Error(), "unknown input type: fork") {
		t.Fatalf("fork: %v", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("a refused fork took %s", d)
	}
	if r := mustTurn(t, a, 2, "count"); r != "turns: 2" {
		t.Fatalf("after the refused fork: %q", r)
	}

	l := launch(t, "--fork-refuse")
	l.Fork = &harness.ForkState{Mechanism: harness.ForkLine, Data: json.RawMessage(`{"turns":2,"history":["a","b"]}`)}
	err = New().Start(context.Background(), l)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "unknown input type: restore") {
		t.Fatalf("restore refused: %#v", err)
	}
}

// A state the harness cannot take, or one of another mechanism, fails the
// sibling's start; a state too long for one line cannot be handed over.
func TestForkBadStates(t *testing.T) {
	for _, c := range []struct {
		fs   *harness.ForkState
		want string
	}{
		{&harness.ForkState{Mechanism: harness.ForkLine, Data: json.RawMessage(`{"turns":-1}`)}, "negative counters"},
		{&harness.ForkState{Mechanism: harness.ForkLine, Data: json.RawMessage(`"not a state"`)}, "not an agent state"},
		{&harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"x"}`)}, `not "resume"`},
		{&harness.ForkState{Mechanism: harness.ForkLine}, "with JSON data"},
	} {
		l := launch(t)
		l.Fork = c.fs
		err := New().Start(context.Background(), l)
		if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, c.want) {
			t.Errorf("%s %s: %v, want startup_failed saying %q", c.fs.Mechanism, c.fs.Data, err, c.want)
		}
	}

	l := launch(t)
	l.MaxLineBytes = 4096
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	// The write directive says only "wrote PATH", but the message joins the
	// history, and with it the state.
	mustTurn(t, a, 1, "write big.txt "+strings.Repeat("z", 5000))
	if _, err := forkState(t, a); !errors.Is(err, harness.ErrForkUnsupported) || !strings.Contains(err.Error(), "max_line_bytes 4096") {
		t.Fatalf("an over-long state: %v", err)
	}
	if r := mustTurn(t, a, 2, "count"); r != "turns: 2" {
		t.Fatalf("after the over-long state: %q", r)
	}
}

func TestForkTimeoutOption(t *testing.T) {
	for _, bad := range []map[string]any{{"fork_timeout": "0s"}, {"fork_timeout": "soon"}, {"fork_after": "1s"}} {
		if _, err := Factory(&harness.Config{Options: bad}); err == nil {
			t.Errorf("options %v accepted", bad)
		}
	}
	if o, err := ParseOptions(nil); err != nil || o.ForkTimeout != DefaultForkTimeout {
		t.Fatalf("defaults %+v %v", o, err)
	}
}

// What the harness writes between turns while it is asked to fork or
// restore belongs to its next turn, as it would have without the question.
func TestForkKeepsOutputForTheNextTurn(t *testing.T) {
	parent := started(t, "--fork-noise")
	mustTurn(t, parent, 1, "remember x")
	fs, err := forkState(t, parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a    *Adapter
		want string
	}{{parent, "noise before answering fork"}, {nil, "noise before answering restore"}} {
		a := c.a
		if a == nil {
			l := launch(t, "--fork-noise")
			l.Fork = fs
			a = New()
			if err := a.Start(context.Background(), l); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Stop(context.Background()) })
		}
		res, ev, err := turn(t, a, 2, "recall")
		if err != nil || res.Response != "recall: x" {
			t.Fatalf("turn after the fork: %+v %v", res, err)
		}
		texts := ev.OfType(wire.EventTextOutput)
		if len(texts) != 2 || texts[0].Data.(*wire.TextOutput).Text != c.want {
			t.Errorf("the next turn's events %v, want %q first", ev.All(), c.want)
		}
	}
}
