// Package jsonl is the adapter for harnessd's line protocol v1: one JSON
// object per line over the harness's stdin and stdout. It is the protocol of
// custom harnesses written for harnessd and of the test double.
//
// The daemon sends {"type":"message","turn":N,"content":...} per turn and
// {"type":"cancel","turn":N} to interrupt; the harness answers with events
// and ends each turn with {"type":"turn_complete","data":{"response":...,
// "done":false}}. A stdout line that is not JSON becomes a text_output event;
// a malformed JSON object, an unknown event type or a bad turn_complete is a
// protocol error.
//
// Between turns the adapter can ask the harness for its state (ForkState,
// the optional {"type":"fork"} message answered by fork_state), and it
// starts a forked sibling's harness from such a state (Launch.Fork: the
// restore message after ready, answered by restored). Options has the one
// knob, fork_timeout. Lines written before ready (and, for a sibling,
// before restored) become the first turn's text events; more than the
// launch's output limit (episode.output_limit) of output by then fails
// start-up, and lines written during a fork request are kept for the next
// turn within 1,024 lines and the same bound in bytes. The adapter must not touch anything beyond the
// harness's process tree: it never decides rewards or sees the trainer.
package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Name is the adapter's name in configurations (harness.adapter).
const Name = "jsonl"

// Factory makes a jsonl adapter for a configuration, checking its options
// (see Options).
func Factory(cfg *harness.Config) (harness.Adapter, error) {
	if _, err := ParseOptions(cfg.Options); err != nil {
		return nil, err
	}
	return New(), nil
}

// Adapter drives a line-protocol harness. The embedded Base starts it and
// provides Stop, Alive and Diagnostics. It is a harness.Forker (fork.go):
// the line protocol's fork and restore messages.
type Adapter struct {
	adapterkit.Base

	mu       sync.Mutex
	opts     Options
	logger   *adapterkit.LogLimit // the episode's records about the harness's output
	turn     int                  // the running turn, 0 between turns
	writing  kit.MessageWrite     // the running turn's message being written
	after    int                  // bytes written to stdin after the turn's message (cancels)
	early    []wire.Event
	pending  [][]byte // lines written between turns (during a fork or restore), handled in the next turn
	pendingN int64    // the bytes of pending
	stale    int      // fork requests that timed out: their late fork_state answers are dropped
	forkSeq  int      // numbers the fork requests
}

// New returns an idle adapter.
func New() *Adapter { return &Adapter{logger: adapterkit.NewLogLimit(nil)} }

// protocolEnv is what the line protocol adds to the harnessd variables.
var protocolEnv = []string{"HARNESSD_PROTOCOL=1"}

// Start runs the command and waits for {"type":"ready"}. With l.Fork (of
// mechanism harness.ForkLine) it then sends {"type":"restore","state":...}
// and waits, within the startup timeout, for {"type":"restored"}; an error
// event instead is a startup_failed Failure carrying the harness's reason.
func (a *Adapter) Start(ctx context.Context, l *harness.Launch) error {
	o, err := ParseOptions(l.Options)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "bad harness options")
	}
	if fs := l.Fork; fs != nil && (fs.Mechanism != harness.ForkLine || !json.Valid(fs.Data)) {
		return harness.Fail(wire.FailureStartupFailed,
			"the jsonl adapter continues only from a %q fork state with JSON data, not %q", harness.ForkLine, fs.Mechanism)
	}
	logger := adapterkit.NewLogLimit(l.Logger)
	var early, pending [][]byte
	_, err = a.Base.Start(ctx, l, adapterkit.Spec{Env: protocolEnv}, func(ctx context.Context, p *process.Process) error {
		var err error
		early, err = p.WaitReady(ctx, isReady)
		if err != nil || l.Fork == nil {
			return err
		}
		pending, err = a.restore(ctx, p, l.Fork, adapterkit.MaxLineBytes(l))
		return err
	})
	if err != nil {
		return err
	}
	a.mu.Lock()
	prev := a.logger
	a.opts, a.logger = o, logger
	a.turn, a.stale = 0, 0
	a.early = a.early[:0]
	for _, line := range early {
		a.early = append(a.early, textEvent(line))
	}
	a.pending, a.pendingN = pending, 0
	for _, line := range pending {
		a.pendingN += int64(len(line))
	}
	a.mu.Unlock()
	prev.Close() // the counts of an earlier episode not stopped
	return nil
}

// Stop stops the harness as Base.Stop does, then logs the episode's counts
// of records not logged (adapterkit.LogLimit).
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	log := a.logger
	a.mu.Unlock()
	defer log.Close()
	return a.Base.Stop(ctx)
}

func isReady(line []byte) bool {
	if !bytes.Contains(line, []byte(`"ready"`)) {
		return false
	}
	var m struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(line, &m) == nil && m.Type == "ready"
}

func textEvent(line []byte) wire.Event {
	return wire.Text(wire.OriginHarness, string(line))
}

// wireEvent is a harness stdout object.
type wireEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// decodeLine splits a stdout object into its type and data: one validating
// scan and a scan of its keys for the usual line (wire.EventParts), the
// full decode for any other (which also gives the error of a malformed one).
// The data is then decoded once, into the payload the observation encodes
// (wire.DecodeChecked).
func decodeLine(line []byte) (wireEvent, error) {
	if json.Valid(line) {
		if typ, data, ok := wire.EventParts(line); ok {
			return wireEvent{Type: typ, Data: data}, nil
		}
	}
	var w wireEvent
	err := json.Unmarshal(line, &w)
	return w, err
}

// Turn sends the message and reads events until turn_complete.
func (a *Adapter) Turn(ctx context.Context, in harness.TurnInput, emit func(wire.Event)) (harness.TurnResult, error) {
	p := a.Process()
	if p == nil {
		return harness.TurnResult{}, harness.Fail(wire.FailureHarnessExited, "harness is not started")
	}
	a.mu.Lock()
	early, pending := a.early, a.pending
	a.early, a.pending, a.pendingN = nil, nil, 0
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.turn = 0
		a.mu.Unlock()
	}()
	for _, e := range early {
		emit(e)
	}

	// The turn runs from before its message is written: a harness may
	// act on the message (call a tool whose event is delivered) before
	// WriteLine returns. Deliver waits for the write, Interrupt checks it:
	// an event or a cancel never precedes its message.
	a.mu.Lock()
	a.turn, a.after = in.Number, 0
	a.writing.Begin()
	a.mu.Unlock()
	line := messageLine(in.Number, in.Message)
	err := p.Write(ctx, append(line, '\n')) // messageLine left room for it
	a.mu.Lock()
	if err != nil {
		a.turn = 0
	}
	a.writing.End()
	a.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return harness.TurnResult{}, ctx.Err()
		}
		return harness.TurnResult{}, a.deadHarness(ctx, p, kit.Delivery{}, "harness stopped reading its input")
	}
	in.MarkLive()
	start := p.OutputBytes()
	answered := false // the harness wrote a line of this turn
	// Lines written between turns (while asked to fork or restore) come
	// first, as they would have without the question, and are bounded as
	// a line of the turn is (CheckOutput's shape check; their bytes were
	// bounded as they were kept).
	values := adapterkit.NewTurnValues(in.OutputLimit)
	for _, text := range pending {
		if err := values.Check(text); err != nil {
			return harness.TurnResult{}, err
		}
		if res, done, err := a.handleLine(text, emit); err != nil || done {
			return res, err
		}
	}
	for {
		// Read on this goroutine: a line wakes no other.
		line, err := p.ReadLine(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return harness.TurnResult{}, ctx.Err()
			}
			if !errors.Is(err, io.EOF) {
				return harness.TurnResult{}, fmt.Errorf("jsonl: read the harness's output: %w", err)
			}
			return harness.TurnResult{}, a.deadHarness(ctx, p, kit.Delivery{Written: true, Answered: answered}, "harness closed its output mid-turn")
		}
		answered = true
		if err := a.CheckOutput(line, in, start, values); err != nil {
			return harness.TurnResult{}, err
		}
		res, done, err := a.handleLine(line.Text, emit)
		if err != nil || done {
			return res, err
		}
	}
}

// handleLine maps one stdout line to an event, or ends the turn.
func (a *Adapter) handleLine(text []byte, emit func(wire.Event)) (harness.TurnResult, bool, error) {
	trimmed := bytes.TrimSpace(text)
	if len(trimmed) == 0 {
		return harness.TurnResult{}, false, nil
	}
	if trimmed[0] != '{' {
		emit(textEvent(text))
		return harness.TurnResult{}, false, nil
	}
	w, err := decodeLine(trimmed)
	if err != nil {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol,
			"harness wrote malformed JSON: %v: %s", err, clip.Bytes(trimmed))
	}
	if w.Type == "ready" {
		return harness.TurnResult{}, false, nil
	}
	if w.Type == "fork_state" && a.dropLate() {
		// The late answer of a fork request that timed out.
		a.logger.Debug("dropped a late fork_state line")
		return harness.TurnResult{}, false, nil
	}
	t := wire.EventType(w.Type)
	if !t.Valid() {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol,
			"harness wrote an event of unknown type %q (the event types are listed in %s)", w.Type, protocolDoc)
	}
	if t == wire.EventEnv {
		// The environment's events are the daemon's to report: a harness
		// claiming one would forge what the environment did.
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol,
			"harness wrote an %s event, which only harnessd reports (see %s)", t, protocolDoc)
	}
	p, err := wire.DecodeChecked(t, w.Data)
	if err != nil {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol,
			"harness wrote a bad %s event: %v (see %s): %s", t, err, protocolDoc, clip.Bytes(trimmed))
	}
	if tc, ok := p.(*wire.TurnComplete); ok {
		return harness.TurnResult{Response: tc.Response, Done: tc.Done, Cancelled: tc.Cancelled, Extra: extraValues(tc.Extra)}, true, nil
	}
	emit(wire.New(wire.OriginHarness, p))
	return harness.TurnResult{}, false, nil
}

// messageLine is {"content":...,"turn":N,"type":"message"}, the bytes
// json.Marshal writes for that map (keys sorted, HTML escaped), without
// encoding a map; its buffer has room for the line's newline after it.
func messageLine(turn int, content string) []byte {
	c, _ := json.Marshal(content) // a string always encodes
	// 37 bytes of keys and braces, up to 20 of the turn's digits, the newline.
	b := make([]byte, 0, len(c)+58)
	b = append(append(append(b, `{"content":`...), c...), `,"turn":`...)
	b = strconv.AppendInt(b, int64(turn), 10)
	return append(b, `,"type":"message"}`...)
}

// protocolDoc is where harness authors find the fields of every event.
const protocolDoc = "docs/protocol.md"

// extraValues decodes the raw values of a turn_complete's extra fields, so
// that TurnResult.Extra holds plain values as every adapter's does: up to
// wire.PlainLimit bytes of them in all, in the order of their keys; the rest
// stay raw JSON, which encodes the same (decoded, a line of [0,0,...] costs
// 40 times its size).
func extraValues(x wire.Extra) map[string]any {
	if len(x) == 0 {
		return nil
	}
	out := make(map[string]any, len(x))
	budget := wire.PlainBudget(wire.PlainLimit)
	for _, k := range slices.Sorted(maps.Keys(x)) {
		v := x[k]
		if raw, ok := v.(json.RawMessage); ok {
			if d := budget.Decode(raw); d != nil || string(bytes.TrimSpace(raw)) == "null" {
				out[k] = d
				continue
			}
		}
		out[k] = v
	}
	return out
}

// deadHarness describes a harness that stopped talking during a turn:
// harness_exited when it exited before taking the message (d says what
// became of it), harness_crashed when it exited after, protocol_error when
// it still runs.
func (a *Adapter) deadHarness(ctx context.Context, p *process.Process, d kit.Delivery, what string) error {
	if st, ok := adapterkit.WaitExit(ctx, p); ok {
		a.mu.Lock()
		d.After = a.after
		a.mu.Unlock()
		if kit.ExitedBeforeTurn(p, st, d) {
			return kit.ExitedBetweenTurns(p, st)
		}
		return &harness.Failure{Type: wire.FailureHarnessCrashed,
			Message: fmt.Sprintf("harness %s mid-turn", st), Exit: &st, StderrTail: p.StderrTail()}
	}
	return harness.Fail(wire.FailureProtocol, "%s", what)
}

// Interrupt sends a cancel line for the running turn.
func (a *Adapter) Interrupt(ctx context.Context) error {
	p := a.Process()
	turn, err := a.sentTurn(ctx, false)
	if p == nil || err != nil {
		return harness.ErrNoTurn
	}
	line := []byte(`{"type":"cancel","turn":` + strconv.Itoa(turn) + `}`)
	a.mu.Lock()
	a.after += len(line) + 1 // counted first: the harness may read it at once
	a.mu.Unlock()
	return p.WriteLine(ctx, line)
}

// sentTurn returns the running turn once its message is written: with wait
// it waits for that until ctx ends, else it does not wait. It returns
// harness.ErrNoTurn between turns (or when the message could not be
// written).
func (a *Adapter) sentTurn(ctx context.Context, wait bool) (int, error) {
	a.mu.Lock()
	turn, pending := a.turn, a.writing.Pending()
	a.mu.Unlock()
	if turn == 0 {
		return 0, harness.ErrNoTurn
	}
	if pending != nil {
		if !wait {
			return 0, harness.ErrNoTurn
		}
		if err := kit.Wait(ctx, pending); err != nil {
			return 0, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.turn != turn {
		return 0, harness.ErrNoTurn
	}
	return turn, nil
}
