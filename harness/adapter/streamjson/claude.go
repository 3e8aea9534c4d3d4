package streamjson

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/beneath"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Name is the adapter's name in configurations (harness.adapter).
const Name = "claude"

// Factory makes a claude adapter for a configuration, checking its options.
func Factory(cfg *harness.Config) (harness.Adapter, error) {
	if _, err := ParseOptions(cfg.Options); err != nil {
		return nil, err
	}
	return New(), nil
}

// Adapter drives a Claude Code (or Qwen Code) stream-json process. A turn
// ends at the agent's result line, by subtype:
//
//   - success: a normal end; Response is result.result (else the last text).
//   - success with is_error: an LLM API error, after which Claude Code exits
//     1: a harness_crashed Failure saying "API Error: <status>: <text>", with
//     the exit status and stderr tail.
//   - any error subtype after Interrupt (error_during_execution): Cancelled.
//   - error_max_turns / error_max_budget_usd: a normal end with Extra
//     max_turns_reached / max_budget_reached set (the agent's own limits
//     ended the turn; the episode goes on).
//   - any other error subtype: a normal end with a recoverable error event.
//
// Failures: malformed JSON, a line without a type or an unreadable
// message/result is a protocol_error; more than TurnInput.OutputLimit bytes
// or an over-long line is output_limit; end of output mid-turn is
// harness_crashed with the exit status and stderr tail. Lines of unknown
// types are ignored: Claude Code adds them over time.
//
// The embedded Base starts the agent and provides Alive and Diagnostics.
type Adapter struct {
	adapterkit.Base

	mu        sync.Mutex
	opts      Options
	server    string               // injected MCP server name
	cfgPath   string               // MCP config file written for this episode
	log       *adapterkit.LogLimit // the episode's records about the agent's output
	early     []process.Line
	session   string           // session_id from system/init
	turn      int              // the running turn, 0 between turns
	interrupt string           // request id of this turn's interrupt, if any
	after     int              // bytes of interrupts written to stdin after the turn's message
	extra     int              // user lines delivered mid-turn whose result is still due (deliver.go)
	writing   kit.MessageWrite // the turn's user line being written (deliver.go waits for it)
	noResume  string           // why this agent cannot be resumed ("" when it can; fork.go)
	configDir string           // the agent's config dir (CLAUDE_CONFIG_DIR), which holds its session files
	project   string           // the project directory name of the agent's working directory
	lastUUID  string           // the uuid of the last top-level transcript message the agent printed (fork.go)
	model     string           // the model of the session (system/init's), which a resumed sibling is started with (fork.go)
}

// New returns an idle adapter.
func New() *Adapter { return &Adapter{log: adapterkit.NewLogLimit(nil)} }

// Start builds the command line (protocol flags, options, MCP injection),
// spawns the agent and waits until it is ready (see handshake).
func (a *Adapter) Start(ctx context.Context, l *harness.Launch) error {
	o, err := ParseOptions(l.Options)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "bad harness options")
	}
	if len(l.Command) == 0 {
		return harness.Fail(wire.FailureStartupFailed, "no harness command configured")
	}
	inv, err := buildInvocation(l, o)
	if err != nil {
		removeConfig(inv.cfgPath)
		return harness.Wrap(wire.FailureStartupFailed, err, "prepare harness")
	}
	session := ""
	if l.Fork != nil {
		var resume []string
		resume, session, err = resumeArgs(l, o)
		if err != nil {
			removeConfig(inv.cfgPath)
			return harness.Wrap(wire.FailureStartupFailed, err, "resume the parent's session")
		}
		inv.args = append(inv.args, resume...)
	}
	log := adapterkit.NewLogLimit(l.Logger)
	a.mu.Lock()
	prev := a.log
	a.log = log
	a.mu.Unlock()
	prev.Close() // the counts of an earlier episode not stopped
	var early []process.Line
	_, err = a.Base.Start(ctx, l, adapterkit.Spec{Args: inv.args, Env: inv.env, StopByEOF: true},
		func(ctx context.Context, p *process.Process) error {
			var err error
			early, err = a.handshake(ctx, p, o)
			return err
		})
	if err != nil {
		removeConfig(inv.cfgPath)
		log.Close()
		return err
	}
	server := ""
	if l.MCP != nil {
		server = l.MCP.ServerName
		if server == "" {
			server = harness.DefaultMCPServerName
		}
	}
	a.mu.Lock()
	a.opts, a.server, a.cfgPath = o, server, inv.cfgPath
	// A resumed sibling's session is its parent's until its first turn's
	// system/init names the forked one.
	a.early, a.session, a.turn, a.interrupt, a.model = early, session, 0, "", ""
	a.noResume = resumable(o, append(append([]string(nil), l.Command...), inv.args...))
	a.configDir, a.project, a.lastUUID = configDir(l), launchProject(l), ""
	a.mu.Unlock()
	return nil
}

// removeConfig removes the MCP config file at path (HOME/mcpConfigFile),
// beneath that HOME: a link on the way out of it is not followed.
func removeConfig(path string) {
	if home, ok := strings.CutSuffix(path, string(filepath.Separator)+mcpConfigFile); ok {
		(beneath.Dir{Path: home}).Remove(mcpConfigFile)
	}
}

// Turn writes one user line and maps the agent's lines to events until the
// result line.
func (a *Adapter) Turn(ctx context.Context, in harness.TurnInput, emit func(wire.Event)) (harness.TurnResult, error) {
	p := a.Process()
	a.mu.Lock()
	early, o, server := a.early, a.opts, a.server
	a.early = nil
	if p != nil {
		a.interrupt = ""
	}
	a.mu.Unlock()
	if p == nil {
		return harness.TurnResult{}, harness.Fail(wire.FailureHarnessExited, "harness is not started")
	}
	defer func() {
		a.mu.Lock()
		a.turn, a.interrupt, a.extra = 0, "", 0
		a.mu.Unlock()
	}()
	if st, ok := p.ExitStatus(); ok {
		return harness.TurnResult{}, &harness.Failure{Type: wire.FailureHarnessExited,
			Message: fmt.Sprintf("harness %s before the turn", st), Exit: &st, StderrTail: p.StderrTail()}
	}
	m := &mapper{a: a, p: p, ctx: ctx, emit: emit, server: server, names: map[string]string{},
		extra: map[string]any{}, values: adapterkit.NewTurnValues(in.OutputLimit),
		partial: o.IncludePartialMessages || slices.Contains(o.ExtraArgs, "--include-partial-messages")}
	start := p.OutputBytes()
	for _, l := range early {
		if res, done, err := a.turnLine(m, l, in, p, start, true); done || err != nil {
			return res, err
		}
	}
	a.mu.Lock()
	a.writing.Begin()
	a.mu.Unlock()
	err := p.WriteLine(ctx, userLine(in.Message))
	a.mu.Lock()
	if err == nil {
		// Interrupts and deliveries count from here: neither precedes its
		// message.
		a.turn, a.after = in.Number, 0
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
	answered := false // the harness wrote a line of this turn
	for {
		// Read on this goroutine: output nobody reads waits in the pipe.
		l, err := p.ReadLine(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return harness.TurnResult{}, ctx.Err()
			}
			if !errors.Is(err, io.EOF) {
				return harness.TurnResult{}, fmt.Errorf("streamjson: read the harness's output: %w", err)
			}
			return harness.TurnResult{}, a.deadHarness(ctx, p, kit.Delivery{Written: true, Answered: answered}, "harness closed its output mid-turn")
		}
		answered = true
		if res, done, err := a.turnLine(m, l, in, p, start, false); done || err != nil {
			if ctx.Err() != nil && err != nil {
				return harness.TurnResult{}, ctx.Err()
			}
			if err == nil && a.resultDue() {
				continue // a delivered line's result is still to come
			}
			return res, err
		}
	}
}

// turnLine applies the output limits, then maps the line.
func (a *Adapter) turnLine(m *mapper, l process.Line, in harness.TurnInput, p *process.Process, start int64, replay bool) (harness.TurnResult, bool, error) {
	if err := a.CheckOutput(l, in, start, m.values); err != nil {
		return harness.TurnResult{}, true, err
	}
	return m.handle(l.Text, replay)
}

// Interrupt sends an interrupt control request for the running turn; the
// agent answers it and ends the turn with an error_during_execution result,
// which Turn reports as Cancelled.
func (a *Adapter) Interrupt(ctx context.Context) error {
	p := a.Process()
	a.mu.Lock()
	turn := a.turn
	if p == nil || turn == 0 {
		a.mu.Unlock()
		return harness.ErrNoTurn
	}
	id := newRequestID()
	a.interrupt = id
	line := controlRequestLine(id, map[string]any{"subtype": "interrupt"})
	a.after += len(line) + 1 // counted first: the harness may read it at once
	a.mu.Unlock()
	if err := p.WriteLine(ctx, line); err != nil {
		return fmt.Errorf("interrupt harness: %w", err)
	}
	return nil
}

func (a *Adapter) isInterrupt(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return id != "" && id == a.interrupt
}

func (a *Adapter) interruptSent() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.interrupt != ""
}

func (a *Adapter) setSession(id, model string) {
	if id == "" {
		return
	}
	a.mu.Lock()
	a.session, a.model = id, model
	a.mu.Unlock()
}

// SessionID returns the agent's session id from its latest system/init
// ("" before the first turn).
func (a *Adapter) SessionID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.session
}

// Stop closes the agent's stdin (Claude Code exits 0 at end of input),
// waits up to half the stop grace for it to exit, then stops the tree with
// the rest of the grace (SIGTERM, then SIGKILL). It removes the MCP config
// file written for the episode. It is idempotent.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	cfg, log := a.cfgPath, a.log
	a.mu.Unlock()
	defer removeConfig(cfg)
	defer log.Close() // the episode's counts of records not logged
	return a.Base.Stop(ctx)
}
