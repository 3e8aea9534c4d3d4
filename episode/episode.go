package episode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// Level is how far an episode is opened.
type Level int

// Readiness levels, in the order Open reaches them.
const (
	// LevelDirectories: fresh private directories (the template copied).
	LevelDirectories Level = iota + 1
	// LevelSandbox: and, in sandbox isolation, the sandbox with its doors
	// listening; nothing of a particular episode yet (no task, no token).
	LevelSandbox
	// LevelDoors: and the task's files, the tool bridge with a fresh
	// token, the model gateway and the egress proxy: everything but the
	// harness (StartHarness adds it).
	LevelDoors
)

// Spec says which episode to open.
type Spec struct {
	// Env is the session's shared environment (Init called).
	Env *Env
	// ID is the episode id.
	ID string
	// Task is the episode's task (nil without a taskset); its files are
	// copied into the workspace at LevelDoors.
	Task *tasks.Task
	// OnEvent receives the events of the episode's doors (bridge,
	// gateway, egress), unless the episode is held.
	OnEvent func(wire.Event)
	// Held starts the episode held (a prepared episode nobody has taken):
	// its doors' events are dropped until Hold(false).
	Held bool
	// Needed, when set (a prepared episode's), is closed once a reset
	// waits for the episode. Until then its directories wait for the disk
	// of an episode still closing for as long as that takes (the disk and
	// the sandbox kept on it cost less than new ones, and no one is
	// waiting); from then on for returnWait at most. Nil: returnWait.
	Needed <-chan struct{}
	// From, when set, is the snapshot (Episode.Snapshot) the episode's
	// directories are restored from instead of the workspace template;
	// the task's Prepare is skipped (its files are already there). The
	// caller keeps its handle; the snapshot stays usable for more.
	From *Snapshot

	// A fork's sibling's doors (all zero otherwise). ModelHistory is the
	// parent's model calls, which the gateway holds as its own; with
	// ModelReplay it answers the harness's next calls from them, and the
	// bridge its tool calls from ToolReplay; OnDivergence hears of the
	// first request unlike the recorded one (a *wire.Divergence).
	ModelHistory *gateway.History
	ModelReplay  bool
	ToolReplay   []bridge.ToolRecord
	OnDivergence func(error)
	// ToolInherit starts the bridge's record with the parent's calls (a
	// sibling that does not replay them), for a later fork of the sibling.
	ToolInherit []bridge.ToolRecord
}

// Episode is one episode's resources. Its methods are safe for concurrent
// use; Open, Advance, StartHarness, Stop and Close are called by one owner
// in turn.
type Episode struct {
	env *Env
	log *slog.Logger

	mu      sync.Mutex
	id      string
	task    *tasks.Task
	onEvent func(wire.Event)
	level   Level
	held    atomic.Bool
	undo    closers
	keep    int             // undos below this index (the directories) survive Stop
	from    *Snapshot       // Spec.From: the directories' snapshot
	needed  <-chan struct{} // Spec.Needed
	snapMu  sync.Mutex      // one Snapshot at a time

	dirs    Dirs
	disk    *quota.FS // the directories' quota, nil without
	slot    *disk     // the session's disk the directories are on, nil without
	sandbox *sandbox.Sandbox
	mounts  sandboxMounts   // the sandbox's tmpfs roots, kept open (storage.go)
	sources []bridge.Source // per-episode tool sources
	// sidesAhead are the configured per-episode tool servers' side
	// sandboxes, started with the episode's own (tools.go's
	// startSidesAhead), by tool name; newSource takes them.
	sidesAhead map[string]*sideLauncher
	catalog    *bridge.Catalog
	server     *bridge.Server
	tools      []string
	injection  *harness.MCPInjection
	model      *modelDoor
	egress     *egress.Proxy
	egressAddr string
	// warnPrivateOnce logs the first private address the egress proxy
	// refused (with the knob), not each of a harness's retries.
	warnPrivateOnce sync.Once
	adapter         harness.Adapter
	fork            forkDoors // a fork's sibling's doors (fork.go)
}

// Open builds the episode of spec up to level. On error whatever it opened
// is closed again.
func Open(ctx context.Context, spec Spec, level Level) (*Episode, error) {
	ep := &Episode{env: spec.Env}
	ep.undo.trace = func(r Resource, op TraceOp) { spec.Env.trace(ep.dirs.Root, ep.ID(), r, op) }
	ep.assign(spec)
	if err := ep.openTo(ctx, level); err != nil {
		ep.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return ep, nil
}

// assign gives the episode its identity (a prepared one gets it when it is
// taken).
func (ep *Episode) assign(spec Spec) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.id, ep.task, ep.onEvent = spec.ID, spec.Task, spec.OnEvent
	ep.fork = forkDoors{history: spec.ModelHistory, modelReplay: spec.ModelReplay, toolReplay: spec.ToolReplay,
		toolInherit: spec.ToolInherit, onDivergence: spec.OnDivergence}
	if spec.From != nil {
		ep.from = spec.From
	}
	if spec.Needed != nil {
		ep.needed = spec.Needed
	}
	ep.log = spec.Env.Logger
	if ep.id != "" {
		ep.log = ep.log.With("episode_id", ep.id)
	}
	if ep.task != nil {
		ep.log = ep.log.With("task_id", ep.task.ID)
	}
	ep.held.Store(spec.Held)
}

// Advance takes a prepared episode (below LevelDoors, opened without an
// identity) for spec and opens it up to level. On error the episode is
// closed.
func (ep *Episode) Advance(ctx context.Context, spec Spec, level Level) error {
	spec.Env = ep.env
	if spec.From != nil && ep.level >= LevelDirectories {
		ep.Close(context.WithoutCancel(ctx))
		return errors.New("episode: a prepared episode's directories are made already; open one from a snapshot with Open")
	}
	ep.assign(spec)
	if err := ep.openTo(ctx, level); err != nil {
		ep.Close(context.WithoutCancel(ctx))
		return err
	}
	return nil
}

// openTo runs the stages between the episode's level and level.
func (ep *Episode) openTo(ctx context.Context, level Level) error {
	stages := []struct {
		level Level
		open  func(context.Context) error
	}{
		{LevelDirectories, ep.openDirectories},
		{LevelSandbox, ep.openSandbox},
		{LevelDoors, ep.openDoors},
	}
	for _, st := range stages {
		if ep.level >= st.level || st.level > level {
			continue
		}
		if err := st.open(ctx); err != nil {
			return err
		}
		ep.level = st.level
	}
	return nil
}

// openDirectories makes the episode's private directories, on a file
// system of their own of limits.disk bytes where the session applies a
// quota: one of the session's, emptied since its last episode (disk.go).
// Both stay until Close.
func (ep *Episode) openDirectories(ctx context.Context) error {
	e := ep.env
	if e.reusesDisks() && ep.from == nil {
		// A fork's sibling gets its disk from the snapshot instead.
		if ok, err := ep.openSlot(ctx); ok || err != nil {
			return err
		}
		// The default quota was given up on this host: on without one.
	}
	d := episodeRoot(e.Dir, e.nextSeq())
	clearLeftover(d.Root) // a crashed daemon's, with the same layout
	if err := os.MkdirAll(d.Root, 0o700); err != nil {
		return fmt.Errorf("create episode directory: %w", err)
	}
	ep.dirs = d
	ep.undo.push(ResourceDirectories, func(context.Context) error {
		if !e.Config.Workspace.Keep {
			return os.RemoveAll(d.Root)
		}
		return nil
	})
	if ep.from != nil {
		err := ep.restoreDirectories(ctx, d, ep.from)
		ep.keep = ep.undo.size()
		return err
	}
	if err := ep.openDisk(ctx, d.Root); err != nil {
		ep.keep = ep.undo.size()
		return err
	}
	ep.keep = ep.undo.size()
	return makeDirs(d, e.Config.Workspace.Template)
}

// openDoors prepares the task's files (unless restored from a snapshot)
// and opens what serves the harness:
// tools and bridge, the MCP injection, the gateway, the egress proxy.
func (ep *Episode) openDoors(ctx context.Context) error {
	if t := ep.Task(); t != nil && ep.from == nil {
		if err := t.Prepare(ep.dirs.Workspace); err != nil {
			return err
		}
	}
	if err := ep.openTools(ctx); err != nil {
		return err
	}
	if err := ep.writeInjection(); err != nil {
		return err
	}
	if err := ep.openModel(); err != nil {
		return err
	}
	return ep.openEgress()
}

// StartHarness hands the episode's directories to the sandbox's harness
// identity and starts the harness through a with Launch's description; it
// returns once the harness is ready or has failed (a *harness.Failure).
// The adapter is the episode's from here on: Stop and Close stop it, and
// a failed start leaves its diagnostics readable.
func (ep *Episode) StartHarness(ctx context.Context, a harness.Adapter, l *harness.Launch) error {
	if err := ep.giveToHarness(); err != nil {
		return err
	}
	ep.mu.Lock()
	ep.adapter = a
	ep.mu.Unlock()
	ep.undo.push(ResourceHarness, a.Stop)
	return a.Start(ctx, l)
}

// Adapter returns the episode's harness adapter (nil before StartHarness).
func (ep *Episode) Adapter() harness.Adapter {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.adapter
}

// StopHarness stops the harness tree (idempotent), keeping everything else
// open: its diagnostics stay readable and the doors keep serving.
func (ep *Episode) StopHarness(ctx context.Context) error {
	if a := ep.Adapter(); a != nil {
		return a.Stop(ctx)
	}
	return nil
}

// Stop closes everything the episode opened but its directories, which
// stay until Close (an ended episode's workspace is read by graders and
// kept for inspection until the next reset). It is idempotent.
func (ep *Episode) Stop(ctx context.Context) error {
	ep.held.Store(true) // nothing more of it is recorded
	return ep.undo.runDownTo(ctx, ep.keep)
}

// Close closes everything the episode opened, its directories too (unless
// workspace.keep). It is idempotent and may follow Stop.
func (ep *Episode) Close(ctx context.Context) error {
	ep.held.Store(true)
	if ep.slot != nil {
		ep.env.disks.willReturn(ep.slot) // a disk waited for (disks.take)
	}
	return ep.undo.runDownTo(ctx, 0)
}

// Hold drops (true) or records (false) the events of the episode's doors.
func (ep *Episode) Hold(held bool) { ep.held.Store(held) }

// emit hands an event of the episode's doors on, unless held.
func (ep *Episode) emit(e wire.Event) {
	if ep.held.Load() {
		return
	}
	ep.mu.Lock()
	f := ep.onEvent
	ep.mu.Unlock()
	if f != nil {
		f(e)
	}
}

// ID returns the episode id.
func (ep *Episode) ID() string {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.id
}

// Log returns the episode's logger (session, episode and task ids).
func (ep *Episode) Log() *slog.Logger {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.log
}

// Task returns the episode's task, nil without one.
func (ep *Episode) Task() *tasks.Task {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.task
}

// Dirs returns the episode's directories.
func (ep *Episode) Dirs() Dirs { return ep.dirs }

// Tools returns the served tool names, sorted.
func (ep *Episode) Tools() []string { return append([]string(nil), ep.tools...) }

// Catalog returns the episode's tool catalog (hidden tools included), nil
// without tools.
func (ep *Episode) Catalog() *bridge.Catalog { return ep.catalog }

// Sandboxed reports whether the episode runs in a sandbox.
func (ep *Episode) Sandboxed() bool { return ep.sandbox != nil }
