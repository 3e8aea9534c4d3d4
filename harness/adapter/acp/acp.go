package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/bearer"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Name is the adapter's name in configurations (harness.adapter).
const Name = "acp"

// Factory makes an acp adapter for a configuration, checking its options.
func Factory(cfg *harness.Config) (harness.Adapter, error) {
	if _, err := ParseOptions(cfg.Options); err != nil {
		return nil, err
	}
	return New(), nil
}

// Info describes the ACP session of an episode. The first turn after Start
// reports it as TurnResult.Extra["acp"].
type Info struct {
	// ProtocolVersion is the version the agent answered to initialize.
	ProtocolVersion int `json:"protocol_version"`
	// AgentInfo is the agent's agentInfo (name, title, version), if given.
	AgentInfo map[string]any `json:"agent_info,omitempty"`
	// SessionID is the session opened with session/new.
	SessionID string `json:"session_id"`
	// Mode is the session mode: the one set by the mode option, else the
	// agent's current mode.
	Mode string `json:"mode,omitempty"`
	// AuthMethod is the method used with authenticate, if any.
	AuthMethod string `json:"auth_method,omitempty"`
	// MCPTransport says how the bridge was injected: "http", "stdio", or
	// empty without tools.
	MCPTransport string `json:"mcp_transport,omitempty"`
	// LoadSession says the agent takes session/load
	// (agentCapabilities.loadSession), so the adapter can fork it by
	// resume (ForkState; fork.go).
	LoadSession bool `json:"load_session,omitempty"`
	// LoadedFrom is the parent's session a forked sibling loaded
	// (session/load instead of session/new); empty otherwise.
	LoadedFrom string `json:"loaded_from,omitempty"`
	// PromptQueueing says the agent takes a session/prompt during a turn
	// into the running turn (agentCapabilities._meta.claudeCode.
	// promptQueueing), so the adapter can deliver mid-turn (Deliver).
	PromptQueueing bool `json:"prompt_queueing,omitempty"`
}

func (i Info) extra() map[string]any {
	m := map[string]any{"protocol_version": i.ProtocolVersion, "session_id": i.SessionID}
	if i.AgentInfo != nil {
		m["agent_info"] = i.AgentInfo
	}
	if i.PromptQueueing {
		m["prompt_queueing"] = true
	}
	for k, v := range map[string]string{"mode": i.Mode, "auth_method": i.AuthMethod, "mcp_transport": i.MCPTransport, "loaded_from": i.LoadedFrom} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Adapter drives an ACP agent: one process and one session per episode.
// The embedded Base starts the agent and provides Alive and Diagnostics.
type Adapter struct {
	adapterkit.Base

	mu       sync.Mutex
	c        *conn
	info     Info
	reported bool // info was reported by a turn

	// The running turn, for Interrupt.
	turnActive bool
	promptSent bool
	// writing is the turn's session/prompt being written: a delivery
	// arriving meanwhile waits for it rather than finding no turn.
	writing    kit.MessageWrite
	cancelReq  bool
	cancelling atomic.Bool
	// Mid-turn deliveries (deliver.go): accepting while the turn's prompt
	// is out and unanswered; queued are the delivered prompts not yet
	// answered.
	accepting bool
	queued    map[int64]bool

	// Set by Start; read by the goroutine running Start or Turn, which is
	// also the one that reads the agent's output and serves its requests.
	opts  Options
	log   *adapterkit.LogLimit // the episode's records about the agent's output
	cur   *turnState           // the running turn, nil outside turns
	calls map[string]*toolCall // tool calls by id, across the episode's turns
}

// New returns an idle adapter.
func New() *Adapter { return &Adapter{} }

// Info returns the facts of the session opened by the last Start.
func (a *Adapter) Info() Info {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.info
}

// Start runs the agent, initializes the connection and opens a session with
// the tool bridge injected. The agent is ready once session/new (and
// session/set_mode when a mode is configured) has succeeded within
// l.StartupTimeout.
func (a *Adapter) Start(ctx context.Context, l *harness.Launch) error {
	opts, err := ParseOptions(l.Options)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "invalid harness.options")
	}
	cwd, err := filepath.Abs(l.Dir())
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "workspace path")
	}
	log := adapterkit.NewLogLimit(l.Logger)
	a.mu.Lock()
	prev := a.log
	a.opts, a.log, a.cur, a.calls = opts, log, nil, map[string]*toolCall{}
	a.mu.Unlock()
	if prev != nil {
		prev.Close() // the counts of an earlier episode not stopped
	}
	var c *conn
	var info Info
	_, err = a.Base.Start(ctx, l, adapterkit.Spec{}, func(sctx context.Context, p *process.Process) error {
		c = newConn(p, log, adapterkit.MaxLineBytes(l), a.serve)
		var err error
		info, err = a.handshake(sctx, c, l, opts, cwd)
		if err != nil {
			c.close()
			if isGone(err) {
				return fmt.Errorf("%w: %w", adapterkit.ErrHungUp, err)
			}
		}
		return err
	})
	if err != nil {
		if c != nil {
			c.wait() // the base has stopped the agent: its output ends
		}
		log.Close()
		return err
	}
	log.Logger().Debug("acp session open", "session", info.SessionID, "agent", info.AgentInfo, "mode", info.Mode, "mcp", info.MCPTransport)
	a.mu.Lock()
	a.c, a.info, a.reported = c, info, false
	a.mu.Unlock()
	return nil
}

// isGone reports an error meaning the agent's process is gone or deaf.
func isGone(err error) bool {
	return errors.Is(err, errClosed) || errors.Is(err, process.ErrNotRunning) || errors.Is(err, process.ErrStopped)
}

// handshake runs initialize, session/new (with authenticate when the agent
// asks for it) and session/set_mode.
func (a *Adapter) handshake(ctx context.Context, c *conn, l *harness.Launch, opts Options, cwd string) (Info, error) {
	ictx := ctx
	if d := opts.InitializeTimeout.D(); d > 0 {
		var cancel context.CancelFunc
		ictx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	raw, err := c.call(ictx, "initialize", initializeParams{
		ProtocolVersion: ProtocolVersion,
		ClientInfo:      implementation{Name: "harnessd", Version: ClientVersion},
	}, watch{})
	if err != nil {
		if ictx.Err() != nil && ctx.Err() == nil {
			return Info{}, fmt.Errorf("initialize: no answer within initialize_timeout %s", opts.InitializeTimeout)
		}
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	var ir initializeResult
	if err := decodeResult(raw, &ir); err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	if ir.ProtocolVersion != ProtocolVersion {
		return Info{}, fmt.Errorf("agent speaks ACP protocol version %d; harnessd speaks %d", ir.ProtocolVersion, ProtocolVersion)
	}
	info := Info{ProtocolVersion: ir.ProtocolVersion, AgentInfo: ir.AgentInfo,
		PromptQueueing: ir.AgentCapabilities.Meta.ClaudeCode.PromptQueueing,
		LoadSession:    ir.AgentCapabilities.LoadSession}
	var methods []string
	for _, m := range ir.AuthMethods {
		methods = append(methods, m.ID)
	}
	if opts.AuthMethod != "" && !contains(methods, opts.AuthMethod) {
		return Info{}, fmt.Errorf("auth_method %q is not offered by the agent (authMethods: %v)", opts.AuthMethod, methods)
	}
	servers, transport, err := mcpServers(l.MCP, &ir, opts)
	if err != nil {
		return Info{}, err
	}
	info.MCPTransport = transport

	method, params := "session/new", any(newSessionParams{Cwd: cwd, MCPServers: servers})
	if l.Fork != nil {
		// A forked sibling opens its parent's session, from its copy of
		// HOME; the history the agent replays as session/update
		// notifications is the parent's, already reported, and dropped.
		parent, err := loadTarget(l.Fork, &info)
		if err != nil {
			return Info{}, err
		}
		method, params = "session/load", loadSessionParams{SessionID: parent, Cwd: cwd, MCPServers: servers}
		info.LoadedFrom = parent
	}
	raw, err = c.call(ctx, method, params, watch{})
	var rerr *RPCError
	if errors.As(err, &rerr) && rerr.Code == CodeAuthRequired {
		if opts.AuthMethod == "" {
			return Info{}, fmt.Errorf("%s: the agent requires authentication (authMethods: %v); set harness.options.auth_method: %w", method, methods, err)
		}
		if _, err := c.call(ctx, "authenticate", authenticateParams{MethodID: opts.AuthMethod}, watch{}); err != nil {
			return Info{}, fmt.Errorf("authenticate %s: %w", opts.AuthMethod, err)
		}
		info.AuthMethod = opts.AuthMethod
		raw, err = c.call(ctx, method, params, watch{})
	}
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", method, err)
	}
	var nr newSessionResult
	if err := decodeResult(raw, &nr); err != nil {
		return Info{}, fmt.Errorf("%s: %w", method, err)
	}
	if info.LoadedFrom != "" {
		nr.SessionID = info.LoadedFrom // session/load answers no id: the session is the one loaded
	}
	if nr.SessionID == "" {
		return Info{}, errors.New("session/new: no sessionId in the result")
	}
	info.SessionID = nr.SessionID
	if nr.Modes != nil {
		info.Mode = nr.Modes.CurrentModeID
	}
	if opts.Mode != "" {
		if nr.Modes != nil && len(nr.Modes.AvailableModes) > 0 {
			var ids []string
			for _, m := range nr.Modes.AvailableModes {
				ids = append(ids, m.ID)
			}
			if !contains(ids, opts.Mode) {
				return Info{}, fmt.Errorf("mode %q is not offered by the agent (modes: %v)", opts.Mode, ids)
			}
		}
		if _, err := c.call(ctx, "session/set_mode", setModeParams{SessionID: nr.SessionID, ModeID: opts.Mode}, watch{}); err != nil {
			return Info{}, fmt.Errorf("session/set_mode %s: %w", opts.Mode, err)
		}
		info.Mode = opts.Mode
	}
	return info, nil
}

// mcpServers builds session/new's mcpServers: the bridge as an http server,
// or through the configured stdio proxy for agents without http support.
func mcpServers(m *harness.MCPInjection, ir *initializeResult, opts Options) ([]any, string, error) {
	servers := []any{}
	if m == nil {
		return servers, "", nil
	}
	name := m.ServerName
	if name == "" {
		name = harness.DefaultMCPServerName
	}
	if ir.AgentCapabilities.MCPCapabilities.HTTP {
		headers := []nameValue{}
		if m.Token != "" {
			headers = append(headers, nameValue{Name: bearer.HeaderName, Value: bearer.Header(m.Token)})
		}
		return append(servers, httpMCPServer{Type: "http", Name: name, URL: m.URL, Headers: headers}), "http", nil
	}
	if len(opts.MCPStdioCommand) == 0 {
		return nil, "", errors.New("the agent does not support http MCP servers (mcpCapabilities.http is false) " +
			"and no mcp_stdio_command is configured to reach the tool bridge over stdio")
	}
	return append(servers, stdioMCPServer{
		Name:    name,
		Command: opts.MCPStdioCommand[0],
		Args:    append([]string{}, opts.MCPStdioCommand[1:]...),
		Env: []nameValue{
			{Name: "HARNESSD_MCP_URL", Value: m.URL},
			{Name: "HARNESSD_MCP_TOKEN", Value: m.Token},
		},
	}), "stdio", nil
}

func decodeResult(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("empty result")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("bad result: %w: %s", err, clip.Bytes(raw))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Turn sends one session/prompt and maps the agent's updates to events
// until its response.
func (a *Adapter) Turn(ctx context.Context, in harness.TurnInput, emit func(wire.Event)) (harness.TurnResult, error) {
	p := a.Process()
	a.mu.Lock()
	c, info, first := a.c, a.info, !a.reported
	a.reported = true
	a.mu.Unlock()
	if p == nil {
		return harness.TurnResult{}, harness.Fail(wire.FailureHarnessExited, "harness is not started")
	}
	if st, ok := p.ExitStatus(); ok {
		return harness.TurnResult{}, &harness.Failure{Type: wire.FailureHarnessExited,
			Message: fmt.Sprintf("agent %s before the turn", st), Exit: &st, StderrTail: p.StderrTail()}
	}

	t := newTurnState(emit, a.log, info.SessionID, a.calls)
	a.cur = t
	a.mu.Lock()
	a.turnActive, a.promptSent, a.cancelReq = true, false, false
	a.writing.Begin()
	a.mu.Unlock()
	in.MarkLive() // an interrupt from here is sent right after the prompt
	a.cancelling.Store(false)
	defer func() {
		a.cur = nil
		a.mu.Lock()
		a.turnActive, a.accepting, a.queued = false, false, nil
		a.mu.Unlock()
		a.cancelling.Store(false)
	}()

	base := p.OutputBytes()
	t.outputBase = base
	id, err := c.request(ctx, "session/prompt", promptParams{
		SessionID: info.SessionID,
		Prompt:    []textBlock{{Type: "text", Text: in.Message}},
	})
	a.mu.Lock()
	a.promptSent = err == nil
	a.accepting = err == nil && info.PromptQueueing
	pending := a.cancelReq
	a.writing.End()
	a.mu.Unlock()
	if err != nil {
		return harness.TurnResult{}, a.turnError(ctx, p, t, err)
	}
	if pending {
		if err := c.notify(ctx, "session/cancel", cancelParams{SessionID: info.SessionID}); err != nil {
			a.log.Debug("acp: session/cancel not delivered", "err", err)
		}
	}
	w := watch{notify: t.notify, limit: in.OutputLimit, base: base, values: adapterkit.NewTurnValues(in.OutputLimit), response: a.queuedAnswer}
	raw, err := c.await(ctx, id, w)
	if err == nil {
		err = a.awaitQueued(ctx, c, w)
	}
	if err != nil {
		var rerr *RPCError
		if errors.As(err, &rerr) && a.cancelRequested() {
			// Some agents fail a cancelled prompt instead of answering
			// stopReason "cancelled"; it was cancelled all the same.
			res := t.result(promptResult{})
			res.Cancelled = true
			res.Extra["error"] = rerr.Error()
			return res, nil
		}
		return harness.TurnResult{}, a.turnError(ctx, p, t, err)
	}
	var pr promptResult
	if err := decodeResult(raw, &pr); err != nil {
		return harness.TurnResult{}, harness.Wrap(wire.FailureProtocol, err, "session/prompt")
	}
	if pr.StopReason == "" {
		a.log.Warn("acp: session/prompt result without stopReason", "result", clip.Bytes(raw))
	}
	res := t.result(pr)
	if first {
		res.Extra["acp"] = info.extra()
	}
	return res, nil
}

func (a *Adapter) cancelRequested() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cancelReq
}

// delivery says what became of the turn's prompt: sent or not, answered
// (the agent wrote anything since) or not. A session/cancel sent behind it
// may lie unread, and its size is not counted, so then the pipe cannot tell.
func (a *Adapter) delivery(p *process.Process, t *turnState) kit.Delivery {
	a.mu.Lock()
	sent, cancelled := a.promptSent, a.cancelReq
	a.mu.Unlock()
	d := kit.Delivery{Written: sent, Answered: p.OutputBytes() > t.outputBase}
	if cancelled {
		d.After = math.MaxInt
	}
	return d
}

// turnError classifies a failed turn.
func (a *Adapter) turnError(ctx context.Context, p *process.Process, t *turnState, err error) error {
	var lerr *limitError
	var rerr *RPCError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case isGone(err):
		if st, ok := adapterkit.WaitExit(ctx, p); ok {
			if kit.ExitedBeforeTurn(p, st, a.delivery(p, t)) {
				return kit.ExitedBetweenTurns(p, st)
			}
			return &harness.Failure{Type: wire.FailureHarnessCrashed, Err: err,
				Message: fmt.Sprintf("agent %s mid-turn", st), Exit: &st, StderrTail: p.StderrTail()}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return harness.Wrap(wire.FailureProtocol, err, "agent stopped talking mid-turn")
	case errors.As(err, &lerr):
		return &harness.Failure{Type: wire.FailureOutputLimit, Message: lerr.msg, Err: err}
	case errors.As(err, &rerr):
		return &harness.Failure{Type: wire.FailureProtocol, Err: err,
			Message: "agent answered session/prompt with " + rerr.Error()}
	default:
		return harness.Wrap(wire.FailureProtocol, err, "session/prompt")
	}
}

// Interrupt sends session/cancel for the running turn. The agent should
// then answer the prompt with stopReason "cancelled"; until it does, the
// turn goes on accepting updates. Permission requests after the cancel are
// answered "cancelled".
func (a *Adapter) Interrupt(ctx context.Context) error {
	a.mu.Lock()
	if !a.turnActive || a.c == nil {
		a.mu.Unlock()
		return harness.ErrNoTurn
	}
	a.cancelReq = true
	a.cancelling.Store(true)
	sent, c, sid := a.promptSent, a.c, a.info.SessionID
	a.mu.Unlock()
	if !sent {
		return nil // the turn sends it right after the prompt
	}
	if err := c.notify(ctx, "session/cancel", cancelParams{SessionID: sid}); err != nil {
		return fmt.Errorf("acp: session/cancel: %w", err)
	}
	return nil
}

// Stop closes the agent's stdin and stops its process tree: SIGTERM to the
// group, SIGKILL after the grace (agents that ignore end of input, like the
// Claude and Codex ACP adapters, need it). It is idempotent.
func (a *Adapter) Stop(ctx context.Context) error {
	p := a.Process()
	a.mu.Lock()
	c, log := a.c, a.log
	a.mu.Unlock()
	if p == nil {
		return nil
	}
	c.close()
	p.CloseStdin() // an error means it is closed already
	err := a.Base.Stop(ctx)
	c.wait()
	log.Close() // the episode's counts of records not logged
	return err
}
