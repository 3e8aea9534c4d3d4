package episode

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode/exposure"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/process"
)

// ListenFunc opens the listener an episode's model gateway serves on.
type ListenFunc func(episodeID string) (net.Listener, error)

// listenLoopback is the default ListenFunc: a fresh port on 127.0.0.1.
func listenLoopback(string) (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// Env is what the episodes of one session share. Fill the exported fields
// and call Init once; the fields must not change afterwards.
type Env struct {
	// Config is the environment, normalized.
	Config *config.Config
	// Supervisor starts every process.
	Supervisor *process.Supervisor
	// Isolation is config.IsolationSandbox or config.IsolationProcess.
	Isolation string
	// SandboxInit is the binary re-executed as each sandbox's init; empty
	// means the running binary (which must call sandbox.Init in main).
	SandboxInit string
	// Hide lists further host paths covered inside every sandbox (the
	// daemon's token and configuration files).
	Hide []string
	// ModelListener opens each episode's gateway listener outside a
	// sandbox; nil means a fresh port on 127.0.0.1.
	ModelListener ListenFunc
	// Dir is the session's directory, which holds its episodes'.
	Dir string
	// Logger carries the session's attributes.
	Logger *slog.Logger
	// Sources are the persistent tool sources (started at the first
	// episode, kept across episodes; the session closes them).
	Sources []bridge.Source
	// Trace, when set, is told of every resource an episode opens and
	// closes (diagnostics and tests).
	Trace func(TraceEvent)
	// Policy is the session's policy version, which every episode's model
	// gateway stamps its calls with (nil: always 0).
	Policy *gateway.PolicyVersion

	perEpisode []config.ToolConfig

	mu      sync.Mutex
	seq     int
	started bool     // Sources started
	dirLock *os.File // the session directory's lock (sweep.go)

	disks disks // the episodes' quota file systems (disk.go)

	exposeOnce sync.Once
	expose     *exposure.View // view()
}

// Init checks the environment and sorts the configured tool servers into
// persistent sources (appended to Sources) and per-episode ones.
func (e *Env) Init() error {
	if e.Config == nil {
		return errors.New("episode: no configuration")
	}
	if e.Supervisor == nil {
		return errors.New("episode: no process supervisor")
	}
	switch e.Isolation {
	case config.IsolationSandbox, config.IsolationProcess:
	default:
		return fmt.Errorf("episode: unknown isolation %q", e.Isolation)
	}
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
	var persistent []bridge.Source
	for _, tc := range e.Config.Tools {
		if tc.PerEpisode {
			e.perEpisode = append(e.perEpisode, tc)
			continue
		}
		persistent = append(persistent, e.newSource(nil, tc, false))
	}
	e.Sources = append(persistent, e.Sources...)
	return nil
}

// Sandboxed reports sandbox isolation.
func (e *Env) Sandboxed() bool { return e.Isolation == config.IsolationSandbox }

// nextSeq numbers an episode's directory within the session.
func (e *Env) nextSeq() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	return e.seq
}

// trace reports an event of the episode in dir to Trace, if set.
func (e *Env) trace(dir, id string, res Resource, op TraceOp) {
	if e.Trace != nil {
		e.Trace(TraceEvent{Dir: dir, Episode: id, Resource: res, Op: op})
	}
}
