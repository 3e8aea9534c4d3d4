// Package jsonl is the fake agent's default front end: harnessd's line
// protocol v1 over stdin and stdout (a ready line, one message line per
// turn, cancel lines, events, turn_complete), driven by testharness/agent's
// directive executor. It is what harness/adapter/jsonl is tested against;
// its Sink is also the oneshot front end's jsonl format.
//
// It owns the line protocol's framing only; the directives are the
// executor's. Like the rest of the fake agent it must not import harnessd's
// own packages: it plays a foreign program.
package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/harnessd/harnessd/testharness/agent"
	"github.com/harnessd/harnessd/testharness/agent/frontend"
)

// Sink maps executor output onto line protocol v1 events.
type Sink struct {
	out    *frontend.LineWriter
	stderr io.Writer
}

// NewSink writes events to out and the stderr directive's text to stderr.
func NewSink(out *frontend.LineWriter, stderr io.Writer) Sink {
	return Sink{out: out, stderr: stderr}
}

// Event is one line protocol event of type typ, stamped now.
func Event(typ string, data map[string]any) map[string]any {
	return map[string]any{"type": typ, "timestamp": float64(time.Now().UnixNano()) / 1e9, "data": data}
}

// Text emits text_output.
func (s Sink) Text(t string) { s.out.JSON(Event("text_output", map[string]any{"text": t})) }

// Thought emits an llm_chunk marked as a thought.
func (s Sink) Thought(t string) {
	s.out.JSON(Event("llm_chunk", map[string]any{"content": t, "index": 0, "thought": true}))
}

// ToolCall emits tool_call.
func (s Sink) ToolCall(id, name string, args json.RawMessage) {
	s.out.JSON(Event("tool_call", map[string]any{"tool_name": name, "arguments": args, "call_id": id}))
}

// ToolResult emits tool_result (its error is the result when it failed).
func (s Sink) ToolResult(id, name, result string, isError bool) {
	var errv any
	if isError {
		errv = result
	}
	s.out.JSON(Event("tool_result", map[string]any{"tool_name": name, "result": result, "error": errv, "call_id": id}))
}

// Error emits an error event.
func (s Sink) Error(msg string, recoverable bool) {
	s.out.JSON(Event("error", map[string]any{"message": msg, "recoverable": recoverable}))
}

// Raw writes line to stdout as it is.
func (s Sink) Raw(line string) { s.out.Line([]byte(line)) }

// Stderr writes t to stderr.
func (s Sink) Stderr(t string) { io.WriteString(s.stderr, t) }

// inbound is one line from the daemon.
type inbound struct {
	Type    string          `json:"type"`
	Turn    int             `json:"turn"`
	Content string          `json:"content"`
	ID      string          `json:"id"`    // fork: echoed in the answer
	State   json.RawMessage `json:"state"` // restore
}

// Options are the line protocol front end's flags beyond the shared ones.
type Options struct {
	frontend.Options
	// NoFork ignores fork messages (no answer at all), as a harness that
	// cannot hand over its state and says nothing.
	NoFork bool
	// ForkRefuse answers fork and restore with an error event, as a
	// harness that does not know the messages does.
	ForkRefuse bool
	// ForkNoise writes a text_output event before answering fork or
	// restore (output between turns that belongs to the next turn).
	ForkNoise bool
}

// Run runs the agent over harnessd's line protocol v1 until stdin ends.
// It returns the process exit code. Besides messages, events and cancels
// it answers {"type":"fork"} between turns with
// {"type":"fork_state","state":STATE} (STATE: agent.State, the executor's
// whole memory; the fork's id echoed) and {"type":"restore","state":STATE}
// with {"type":"restored"} once the executor continues from it, or an
// error event when the state is not one it made.
func Run(jo Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	opts := jo.Options
	if code, exit := frontend.Start(opts, stderr); exit {
		return code
	}
	out := frontend.NewLineWriter(stdout)
	if opts.NoisyStart {
		out.Line([]byte("testharness agent starting (not JSON)"))
	}
	time.Sleep(opts.SlowStart)
	if opts.NeverReady {
		select {}
	}

	exe := &agent.Executor{}
	if tools := frontend.EnvTools(opts); tools != nil {
		defer tools.Close()
		exe.Tools = tools
	}
	sink := NewSink(out, stderr)

	// One reader goroutine: messages queue up, cancels reach the running turn.
	var (
		mu            sync.Mutex
		cancelTurn    context.CancelFunc
		turnNo        int
		pendingCancel int
	)
	msgs := make(chan inbound, 64)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			var in inbound
			if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
				sink.Error("bad input line: "+err.Error(), true)
				continue
			}
			switch in.Type {
			case "message", "fork", "restore":
				// Fork and restore queue behind the turns, so that they
				// see the executor between turns.
				msgs <- in
			case "event":
				// An environment event mid-turn: shown at once, and handed
				// to the turn (the waitevent directive says it).
				sink.Text("event received: " + in.Content)
				exe.Deliver(in.Content)
			case "cancel":
				mu.Lock()
				if cancelTurn != nil && (in.Turn == 0 || in.Turn == turnNo) {
					cancelTurn()
				} else if in.Turn > turnNo {
					pendingCancel = in.Turn // the turn is queued, not started
				}
				mu.Unlock()
			default:
				sink.Error("unknown input type: "+in.Type, true)
			}
		}
	}()

	out.JSON(map[string]any{"type": "ready", "data": map[string]any{"agent": "testharness", "pid": os.Getpid()}})
	for in := range msgs {
		if in.Type != "message" {
			forkMessage(jo, exe, sink, out, in)
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancelTurn, turnNo = cancel, in.Turn
		if pendingCancel != 0 && pendingCancel == in.Turn {
			cancel()
		}
		mu.Unlock()
		res := exe.RunTurn(ctx, in.Content, sink)
		mu.Lock()
		cancelTurn = nil
		mu.Unlock()
		cancel()
		if res.CloseOut {
			out.Close()
		}
		if !res.NoComplete {
			data := map[string]any{"response": res.Response, "done": res.Done}
			if res.Cancelled {
				data["cancelled"] = true
			}
			out.JSON(Event("turn_complete", data))
		}
		if res.ExitAfter != nil {
			out.Close()
			return *res.ExitAfter
		}
	}
	out.Close()
	return 0
}

// forkMessage answers a fork or restore line between turns.
func forkMessage(jo Options, exe *agent.Executor, sink Sink, out *frontend.LineWriter, in inbound) {
	if jo.ForkNoise {
		sink.Text("noise before answering " + in.Type)
	}
	switch {
	case jo.NoFork && in.Type == "fork":
		return // says nothing: the daemon's wait for an answer runs out
	case jo.ForkRefuse:
		sink.Error("unknown input type: "+in.Type, true)
	case in.Type == "fork":
		answer := map[string]any{"type": "fork_state", "state": exe.Snapshot()}
		if in.ID != "" {
			answer["id"] = in.ID
		}
		out.JSON(answer)
	case len(in.State) == 0:
		sink.Error("restore: no state", false)
	default:
		if err := exe.Restore(in.State); err != nil {
			sink.Error(err.Error(), false)
			return
		}
		out.JSON(map[string]any{"type": "restored"})
	}
}
