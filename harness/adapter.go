package harness

import (
	"context"
	"log/slog"
	"time"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Adapter drives one harness process tree over one harness protocol. One
// Adapter belongs to one Session and is used for one episode at a time;
// Start is called again (after Stop) for the next episode. Adapters never
// decide rewards and never see the trainer's connection.
//
// The Session serialises Start, Turn and Stop; Interrupt and Alive may be
// called concurrently with a running Turn.
type Adapter interface {
	// Start launches the harness for an episode, with the tool injection of
	// l prepared before the process starts, and returns once it is ready or
	// has failed. A failure is a *Failure of type wire.FailureStartupFailed (with exit
	// status and stderr tail where known) and leaves nothing running.
	Start(ctx context.Context, l *Launch) error

	// Turn runs one conversational turn: it delivers in.Message and streams
	// the harness's events through emit until the protocol's turn boundary.
	// It does not emit turn_complete: it returns the turn's result, and the
	// session emits the turn's end. ctx carries the turn deadline; when ctx
	// ends Turn returns promptly with ctx's error. A harness failure is a
	// *Failure (harness_crashed, protocol_error, output_limit, ...).
	Turn(ctx context.Context, in TurnInput, emit func(wire.Event)) (TurnResult, error)

	// Interrupt asks the harness to end the running turn early, keeping the
	// conversation (best effort). The running Turn then returns, normally
	// with Cancelled set. Without a turn under way — before Turn has
	// delivered the message and called TurnInput.MarkLive, or after it
	// ended — it does nothing and returns ErrNoTurn.
	Interrupt(ctx context.Context) error

	// Stop ends the harness and kills its whole process tree. It is
	// idempotent and succeeds when never started or already dead.
	Stop(ctx context.Context) error

	// Alive reports whether the harness process is running.
	Alive() bool

	// Diagnostics returns the harness's exit status (nil while running or
	// never started), its stderr tail and its pid (0 if never started).
	Diagnostics() (exit *process.ExitStatus, stderrTail string, pid int)
}

// Launch is everything an adapter needs to start a harness for one episode.
type Launch struct {
	EpisodeID string
	// Command is the harness's argv (from configuration or a preset).
	Command []string
	// Workspace is the episode's private working directory, as the daemon
	// sees it (a host path).
	Workspace string
	// Home is the episode's private HOME, as the daemon sees it; config
	// files the adapter writes for the harness go here. In a sandbox the
	// harness sees both at other paths: the Launcher rewrites every host
	// path in a command's arguments, environment and directory, so an
	// adapter passes these as they are (a path the harness gets by another
	// way, such as a protocol message, is Dir() or WorkDir-based instead).
	Home string
	// Env is the harness's environment: the allowlisted daemon variables,
	// the configured ones, HOME and TMPDIR. Adapters give the harness this
	// plus the HARNESSD_* variables (adapterkit.Env) and their protocol's own.
	Env []string
	// MCP is the tool injection; nil when the environment has no tools.
	MCP *MCPInjection
	// Model is how the agent reaches its model: with a model gateway
	// (harness.model.url set) the gateway's root, the configured model name
	// and the per-episode key; the real key and its variable never appear.
	Model ModelAccess
	// Options are the adapter-specific options of the configuration.
	Options map[string]any
	// StartupTimeout bounds start-up until ready.
	StartupTimeout time.Duration
	// StopGrace is the SIGTERM-to-SIGKILL grace used by Stop.
	StopGrace time.Duration
	// MaxLineBytes bounds one line of harness output.
	MaxLineBytes int
	// OutputLimit bounds the bytes the harness may write before it is
	// ready (and, for adapters that keep what a harness writes between
	// turns, what is kept of that), as TurnInput.OutputLimit bounds a
	// turn's: it is episode.output_limit too. A harness that writes more
	// during start-up fails it (startup_failed, naming the knob). Zero or
	// less means process.DefaultMaxStartupBytes.
	OutputLimit int64
	// Supervisor starts the process tree.
	Supervisor *process.Supervisor
	// Launcher, when set, is the episode's sandbox: adapters put it in
	// every process.Spec of the harness (adapterkit does), so the harness
	// runs inside. Nil in process isolation.
	Launcher process.Launcher
	// WorkDir is the harness's working directory as the harness sees it;
	// empty means Workspace (process isolation). A sandbox shows the
	// workspace at a fixed path, or at workspace.mount_at.
	WorkDir string
	// Logger carries session and episode attributes.
	Logger *slog.Logger
	// Fork, when set, makes Start continue the harness from a parent's
	// state (a ForkState the parent's adapter, of the same kind, returned
	// from Forker.ForkState): the claude adapter resumes the parent's
	// session (--resume ID --fork-session), the acp adapter loads it
	// (session/load), the jsonl adapter sends the restore message after
	// ready. Start then returns once the harness is
	// ready and restored; a harness that refuses the state is a
	// startup_failed *Failure carrying its reason. An adapter that cannot
	// take the state's mechanism fails Start so, too. Nil starts fresh.
	Fork *ForkState
}

// Dir returns the harness's working directory: WorkDir, else Workspace.
func (l *Launch) Dir() string {
	if l.WorkDir != "" {
		return l.WorkDir
	}
	return l.Workspace
}

// MCPInjection describes the bridge serving the environment's tools.
type MCPInjection struct {
	// ServerName is the MCP server name harnesses should use ("env").
	ServerName string
	// URL is the bridge's streamable-HTTP endpoint.
	URL string
	// Token is the bearer token for Authorization.
	Token string
	// ConfigPath is a standard {"mcpServers":{...}} file describing the bridge.
	ConfigPath string
	// Tools are the served tool names.
	Tools []string
}

// TurnInput is one turn's request.
type TurnInput struct {
	// Number is the turn's 1-based number in the episode.
	Number int
	// Message is the user message of the turn.
	Message string
	// OutputLimit bounds the bytes the harness may write during the turn
	// (0: unlimited). Exceeding it is a wire.FailureOutputLimit failure.
	OutputLimit int64
	// Live, when set, is called (through MarkLive) once the turn is live:
	// the adapter has delivered the message, so that its Interrupt reaches
	// the turn instead of returning ErrNoTurn. Session.Interrupt waits for
	// it.
	Live func()
}

// MarkLive tells the session that the turn is live (see Live). Adapters
// call it right after the point from which their Interrupt works; calling
// it more than once is harmless.
func (in TurnInput) MarkLive() {
	if in.Live != nil {
		in.Live()
	}
}

// TurnResult is how a turn ended.
type TurnResult struct {
	// Response is the final text of the turn.
	Response string
	// Done says the harness declared the task complete.
	Done bool
	// Cancelled says the turn ended early because of Interrupt.
	Cancelled bool
	// Extra holds protocol facts worth reporting (stop reason, usage, cost).
	Extra map[string]any
}
