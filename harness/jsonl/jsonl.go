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
package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Name is the adapter's registered name.
const Name = "jsonl"

func init() {
	harness.RegisterAdapter(Name, func(*harness.Config) (harness.Adapter, error) { return New(), nil })
}

// exitWait is how long a turn waits, after the harness closes stdout, for
// its exit status to be known.
const exitWait = 2 * time.Second

// Adapter drives a line-protocol harness.
type Adapter struct {
	mu      sync.Mutex
	p       *process.Process
	grace   time.Duration
	maxLine int // the line limit, for messages
	turn    int // the running turn, 0 between turns
	after   int // bytes written to stdin after the turn's message (cancels)
	early   []wire.Event
}

// New returns an idle adapter.
func New() *Adapter { return &Adapter{} }

// Env returns the line-protocol variables for a launch.
func Env(l *harness.Launch) []string {
	env := append([]string(nil), l.Env...)
	env = append(env,
		"HARNESSD_PROTOCOL=1",
		"HARNESSD_EPISODE_ID="+l.EpisodeID,
		"HARNESSD_WORKSPACE="+l.Workspace,
	)
	if l.MCP != nil {
		env = append(env,
			"HARNESSD_MCP_URL="+l.MCP.URL,
			"HARNESSD_MCP_TOKEN="+l.MCP.Token,
			"HARNESSD_MCP_CONFIG="+l.MCP.ConfigPath,
		)
	}
	return env
}

// Start runs the command and waits for {"type":"ready"}.
func (a *Adapter) Start(ctx context.Context, l *harness.Launch) error {
	if len(l.Command) == 0 {
		return harness.Fail(wire.FailureStartupFailed, "no harness command configured")
	}
	p, err := l.Supervisor.Start(process.Spec{
		Name:         "harness",
		Path:         l.Command[0],
		Args:         l.Command[1:],
		Dir:          l.Workspace,
		Env:          Env(l),
		MaxLineBytes: l.MaxLineBytes,
		Logger:       l.Logger,
	})
	if err != nil {
		return startFailure(err)
	}
	sctx, cancel := context.WithTimeout(ctx, l.StartupTimeout)
	defer cancel()
	early, err := p.WaitReady(sctx, isReady)
	if err != nil {
		return startFailure(err)
	}
	a.mu.Lock()
	a.p, a.grace, a.turn = p, l.StopGrace, 0
	a.maxLine = l.MaxLineBytes
	if a.maxLine <= 0 {
		a.maxLine = process.DefaultMaxLineBytes
	}
	a.early = a.early[:0]
	for _, line := range early {
		a.early = append(a.early, textEvent(line))
	}
	a.mu.Unlock()
	return nil
}

func startFailure(err error) error {
	f := harness.Wrap(wire.FailureStartupFailed, nil, "%v", err)
	var se *process.StartError
	if errors.As(err, &se) {
		f.Message = se.Error()
		f.Exit, f.StderrTail = se.Exit, se.StderrTail
		f.Err = se
	}
	return f
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

func (a *Adapter) proc() *process.Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.p
}

// wireEvent is a harness stdout object.
type wireEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Turn sends the message and reads events until turn_complete.
func (a *Adapter) Turn(ctx context.Context, in harness.TurnInput, emit func(wire.Event)) (harness.TurnResult, error) {
	p := a.proc()
	if p == nil {
		return harness.TurnResult{}, harness.Fail(wire.FailureHarnessExited, "harness is not started")
	}
	a.mu.Lock()
	early := a.early
	a.early = nil
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.turn = 0
		a.mu.Unlock()
	}()
	for _, e := range early {
		emit(e)
	}

	msg, _ := json.Marshal(map[string]any{"type": "message", "turn": in.Number, "content": in.Message})
	if err := p.WriteLine(ctx, msg); err != nil {
		if ctx.Err() != nil {
			return harness.TurnResult{}, ctx.Err()
		}
		return harness.TurnResult{}, a.deadHarness(ctx, p, kit.Delivery{}, "harness stopped reading its input")
	}
	// Interrupts count from here: a cancel never precedes its message.
	a.mu.Lock()
	a.turn, a.after = in.Number, 0
	a.mu.Unlock()
	in.MarkLive()
	start := p.OutputBytes()
	answered := false // the harness wrote a line of this turn
	for {
		var line process.Line
		var ok bool
		select {
		case line, ok = <-p.Lines():
		case <-ctx.Done():
			return harness.TurnResult{}, ctx.Err()
		}
		if !ok {
			return harness.TurnResult{}, a.deadHarness(ctx, p, kit.Delivery{Written: true, Answered: answered}, "harness closed its output mid-turn")
		}
		answered = true
		if line.TooLong {
			a.mu.Lock()
			limit := a.maxLine
			a.mu.Unlock()
			return harness.TurnResult{}, harness.Fail(wire.FailureOutputLimit,
				"harness wrote a %d-byte line (limit %d)", line.Size, limit)
		}
		if in.OutputLimit > 0 && p.OutputBytes()-start > in.OutputLimit {
			return harness.TurnResult{}, harness.Fail(wire.FailureOutputLimit,
				"harness wrote more than %d bytes in one turn", in.OutputLimit)
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
	var w wireEvent
	if err := json.Unmarshal(trimmed, &w); err != nil {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol,
			"harness wrote malformed JSON: %v: %s", err, clip.Bytes(trimmed))
	}
	if w.Type == "ready" {
		return harness.TurnResult{}, false, nil
	}
	t := wire.EventType(w.Type)
	if !t.Valid() {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol,
			"harness wrote an event of unknown type %q (the event types are listed in %s)", w.Type, protocolDoc)
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

// protocolDoc is where harness authors find the fields of every event.
const protocolDoc = "docs/protocol.md"

// extraValues decodes the raw values of a turn_complete's extra fields, so
// that TurnResult.Extra holds plain values as every adapter's does.
func extraValues(x wire.Extra) map[string]any {
	if len(x) == 0 {
		return nil
	}
	out := make(map[string]any, len(x))
	for k, v := range x {
		if raw, ok := v.(json.RawMessage); ok {
			var d any
			if json.Unmarshal(raw, &d) == nil {
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
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-p.Exited():
	case <-t.C:
	case <-ctx.Done():
	}
	if st, ok := p.ExitStatus(); ok {
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
	a.mu.Lock()
	p, turn := a.p, a.turn
	a.mu.Unlock()
	if p == nil || turn == 0 {
		return harness.ErrNoTurn
	}
	line := []byte(`{"type":"cancel","turn":` + strconv.Itoa(turn) + `}`)
	a.mu.Lock()
	a.after += len(line) + 1 // counted first: the harness may read it at once
	a.mu.Unlock()
	return p.WriteLine(ctx, line)
}

// Stop kills the harness's tree.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	p, grace := a.p, a.grace
	a.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Stop(ctx, grace)
}

// Alive reports whether the harness is running.
func (a *Adapter) Alive() bool {
	p := a.proc()
	return p != nil && p.Alive()
}

// Diagnostics reports exit status, stderr tail and pid.
func (a *Adapter) Diagnostics() (*process.ExitStatus, string, int) {
	return kit.Diagnostics(a.proc())
}
