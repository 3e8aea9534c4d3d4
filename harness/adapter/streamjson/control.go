package streamjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

const (
	// settleTime is how long, with initialize off, a freshly spawned agent
	// must stay alive to count as started (Claude prints nothing before the
	// first user message, so there is no other signal).
	settleTime = 200 * time.Millisecond
	// maxEarlyLines bounds the lines kept from before readiness; their
	// bytes are bounded by the launch's output limit
	// (process.Process.CheckStartupOutput).
	maxEarlyLines = 1024
)

// handshake waits until the agent is ready and returns the lines it printed
// meanwhile. With Options.Initialize it sends the initialize control request
// and waits for its control_response (success or error: either proves a
// live agent speaking the protocol); an agent that has not answered within
// Options.InitializeTimeout is assumed not to know the request and is ready
// if still alive — unless the start-up deadline (ctx) comes first, which is
// a failure: an initialize_timeout at or above the startup timeout makes
// the response mandatory. Without Initialize the agent is ready once alive
// after settleTime. An agent that writes more than the launch's output limit
// (episode.output_limit) before its answer fails start-up.
func (a *Adapter) handshake(ctx context.Context, p *process.Process, o Options) ([]process.Line, error) {
	if !o.Initialize {
		t := time.NewTimer(settleTime)
		defer t.Stop()
		select {
		case <-t.C:
			return nil, nil
		case <-p.Exited():
			return nil, a.startupFailure(ctx, p, "exited during start-up", nil)
		case <-ctx.Done():
			return nil, a.startupFailure(ctx, p, "did not start", ctx.Err())
		}
	}
	id := newRequestID()
	req := controlRequestLine(id, map[string]any{"subtype": "initialize", "hooks": nil})
	if err := p.WriteLine(ctx, req); err != nil {
		return nil, a.startupFailure(ctx, p, "stopped reading its input during start-up", err)
	}
	ictx, cancel := context.WithTimeout(ctx, o.InitializeTimeout)
	defer cancel()
	var early []process.Line
	for {
		l, err := p.ReadLine(ictx)
		switch {
		case ctx.Err() != nil:
			return nil, a.startupFailure(ctx, p, "did not become ready", ctx.Err())
		case ictx.Err() != nil:
			if !p.Alive() {
				return nil, a.startupFailure(ctx, p, "exited during start-up", nil)
			}
			a.log.Info("agent did not answer the initialize control request; assuming it is ready",
				"waited", o.InitializeTimeout)
			return early, nil
		case errors.Is(err, io.EOF):
			return nil, a.startupFailure(ctx, p, "closed its output during start-up", nil)
		case err != nil:
			return nil, a.startupFailure(ctx, p, "output could not be read during start-up", err)
		}
		if r, ok := initializeResponse(l, id); ok {
			if r.Subtype == "error" {
				a.log.Warn("agent refused the initialize control request", "error", r.errorText())
			}
			return early, nil
		}
		if len(early) == maxEarlyLines {
			return nil, a.startupFailure(ctx, p,
				fmt.Sprintf("wrote more than %d lines before answering initialize", maxEarlyLines), nil)
		}
		if err := p.CheckStartupOutput(); err != nil {
			return nil, err // described by adapterkit, naming the knob
		}
		early = append(early, l)
	}
}

// initializeResponse reports whether l is the control_response to id.
func initializeResponse(l process.Line, id string) (controlResponse, bool) {
	if l.TooLong || !bytes.Contains(l.Text, []byte(id)) {
		return controlResponse{}, false
	}
	var w line
	var r controlResponse
	if json.Unmarshal(l.Text, &w) != nil || w.Type != "control_response" || json.Unmarshal(w.Response, &r) != nil {
		return controlResponse{}, false
	}
	return r, r.RequestID == id
}

// startupFailure kills the tree and describes why start-up failed. When the
// agent went away by itself (cause nil or a dead pipe) the failure carries
// its exit status; stderr's tail is always kept.
func (a *Adapter) startupFailure(ctx context.Context, p *process.Process, what string, cause error) error {
	natural := cause == nil || errors.Is(cause, process.ErrNotRunning)
	if natural {
		// The agent is going away; let its exit status and stderr arrive.
		adapterkit.WaitExit(context.WithoutCancel(ctx), p)
	}
	p.Stop(context.WithoutCancel(ctx), 0)
	f := &harness.Failure{Type: wire.FailureStartupFailed, Message: "harness " + what, Err: cause,
		StderrTail: p.StderrTail()}
	if cause != nil {
		f.Message += ": " + cause.Error()
	}
	if st, ok := p.ExitStatus(); ok && natural {
		f.Exit = &st
		f.Message += " (" + st.String() + ")"
	}
	if tail := strings.TrimSpace(f.StderrTail); tail != "" {
		f.Message += "; stderr tail:\n" + tail
	}
	return f
}

// answer replies to a control request from the agent. Tool permission
// requests (can_use_tool: Claude with --permission-prompt-tool stdio, Qwen
// in SDK mode without yolo) are allowed with the input unchanged: the
// environment's sandbox, not a prompt, is the boundary. Anything else is
// refused, so the agent never waits on us.
func (a *Adapter) answer(ctx context.Context, p *process.Process, l line) {
	var req struct {
		Subtype string          `json:"subtype"`
		Input   json.RawMessage `json:"input"`
	}
	var reply []byte
	if err := json.Unmarshal(l.Request, &req); err != nil {
		reply = controlResponseLine(l.RequestID, nil, "harnessd: unreadable control request")
	} else if req.Subtype == "can_use_tool" {
		input := any(map[string]any{})
		if len(req.Input) > 0 && string(req.Input) != "null" {
			input = req.Input
		}
		reply = controlResponseLine(l.RequestID, map[string]any{"behavior": "allow", "updatedInput": input}, "")
	} else {
		reply = controlResponseLine(l.RequestID, nil, "harnessd does not handle control request "+req.Subtype)
	}
	if err := p.WriteLine(ctx, reply); err != nil {
		a.log.Warn("could not answer a control request", "subtype", clip.String(req.Subtype), "err", err)
	}
}

// apiFailure describes an LLM API error the agent reported (result subtype
// success with is_error). Claude Code exits 1 right after it, so the
// failure carries the exit status when it comes within adapterkit.ExitWait.
func (a *Adapter) apiFailure(ctx context.Context, p *process.Process, status any, text string) error {
	text = strings.TrimSpace(text)
	code := ""
	if n, ok := status.(float64); ok {
		code = fmt.Sprintf("%d", int(n))
	}
	text = strings.TrimSpace(strings.TrimPrefix(text, "API Error:"))
	if code != "" {
		text = strings.TrimSpace(strings.TrimPrefix(text, code))
	}
	msg := "API Error: " + text
	if code != "" {
		msg = "API Error: " + code + ": " + text
	}
	adapterkit.WaitExit(ctx, p)
	f := &harness.Failure{Type: wire.FailureHarnessCrashed, Message: msg, StderrTail: p.StderrTail()}
	if st, ok := p.ExitStatus(); ok {
		f.Exit = &st
	}
	return f
}

// deadHarness describes a harness that stopped talking during a turn:
// harness_exited when it exited before taking the message (d says what
// became of it), harness_crashed when it exited after, protocol_error when
// it still runs.
func (a *Adapter) deadHarness(ctx context.Context, p *process.Process, d kit.Delivery, what string) error {
	adapterkit.WaitExit(ctx, p)
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
