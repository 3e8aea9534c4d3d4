package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/internal/beneath"
	"github.com/harnessd/harnessd/internal/linux/cgroups"
	"github.com/harnessd/harnessd/internal/linux/procfs"
	"github.com/harnessd/harnessd/internal/linux/session"
	"github.com/harnessd/harnessd/internal/pathmap"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox/internal/control"
	"github.com/harnessd/harnessd/process/sandbox/internal/spawner"
)

// Cloneflags are the namespaces every sandbox gets.
const Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

// Exit is how a sandbox ended.
type Exit struct {
	// Status is the harness's exit status as the init saw it, exactly; when
	// the init itself died first (killed from outside), the init's.
	Status process.ExitStatus `json:"status"`
	// InitDied reports that the init ended before reporting the harness's
	// status (SIGKILLed, or its setup failed).
	InitDied bool `json:"init_died,omitempty"`
	// Limit names the cgroup limit the tree ran into (LimitMemory,
	// LimitPids), empty when none.
	Limit string `json:"limit,omitempty"`
}

// Sandbox is one started sandbox. Its methods are safe for concurrent use;
// Close must be called.
type Sandbox struct {
	cfg     Config
	ids     idPlan
	init    *spawner.Init
	ctl     *net.UnixConn
	cg      *cgroupSet
	initPid int
	pidNS   string
	maps    pathmap.Table // host paths to the sandbox's (Inside, Launcher)

	doorsMu sync.RWMutex
	doors   map[string]*net.TCPListener // replaced by Recycle

	// recycling is where the watch hands Recycle the init's answer.
	recycling atomic.Pointer[chan recycleReply]

	sendMu sync.Mutex
	runMu  sync.Mutex // serialises Run: one harness at a time
	cur    atomic.Pointer[Run]
	done   chan struct{} // closed when the init is reaped and the channel read to its end
	// initExit is how the init ended (valid once done is closed).
	initExit Exit
	closeErr error
	closed   sync.Once
}

// Run is one harness run in a sandbox. A sandbox runs one harness at a
// time and may run several in turn (one per turn of a one-shot CLI, then
// a grader); every process a run started is killed when its harness exits.
type Run struct {
	s       *Sandbox
	started chan message // the started or error reply to go
	inner   atomic.Int64 // the harness's pid inside, once started
	host    atomic.Int64 // its pid on the host, when its pidfd came with started
	done    chan struct{}
	exit    Exit
	base    cgroups.Events
	ended   sync.Once
	group   atomic.Pointer[session.Group] // the harness's scheduling group until lightened
}

// finish records how the run ended (once) and closes Done.
func (r *Run) finish(e Exit) {
	r.ended.Do(func() {
		if e.Limit == "" {
			e.Limit = r.s.cg.limitHit(r.base)
		}
		r.exit = e
		r.group.Swap(nil).Close()
		close(r.done)
	})
}

// Done is closed once the run's harness has exited and every process it
// left has been killed (or the sandbox ended).
func (r *Run) Done() <-chan struct{} { return r.done }

// Exit returns how the run ended, once Done is closed.
func (r *Run) Exit() (Exit, bool) {
	select {
	case <-r.done:
		return r.exit, true
	default:
		return Exit{}, false
	}
}

// Wait blocks until the run has ended or ctx ends.
func (r *Run) Wait(ctx context.Context) (Exit, error) {
	select {
	case <-r.done:
		return r.exit, nil
	case <-ctx.Done():
		return Exit{}, ctx.Err()
	}
}

// Lighten gives the run's harness a lower scheduling weight
// (session.Group): call it once the harness has started up, since a
// harness starting at the lowest weight is preempted through its whole
// start. Later calls, and calls where the daemon may not, do nothing.
func (r *Run) Lighten() { r.group.Swap(nil).Lighten() }

// InnerPid is the harness's pid inside the sandbox (0 before it started).
func (r *Run) InnerPid() int { return int(r.inner.Load()) }

// cloneError explains a refused clone of the namespaces.
func cloneError(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINVAL) {
		return &SetupError{Stage: StageClone, Err: err}
	}
	return fmt.Errorf("start sandbox init: %w", err)
}

// awaitReady reads the init's ready message (with the doors) or its error.
func (s *Sandbox) awaitReady(ctx context.Context) error {
	type result struct {
		m     message
		files []*os.File
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		m, files, err := receive(s.ctl)
		ch <- result{m, files, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		s.init.Kill()
		r = <-ch
		control.CloseAll(r.files)
		return fmt.Errorf("sandbox setup: %w", ctx.Err())
	}
	if r.err != nil {
		if errors.Is(r.err, errClosed) {
			return &SetupError{Stage: StageInit, Err: fmt.Errorf("the init exited during setup (%s)", s.init.Wait())}
		}
		return r.err
	}
	switch r.m.Type {
	case msgError:
		control.CloseAll(r.files)
		return &SetupError{Stage: r.m.Stage, Err: errors.New(r.m.Error)}
	case msgReady:
	default:
		control.CloseAll(r.files)
		return fmt.Errorf("sandbox init sent %q before ready", r.m.Type)
	}
	return s.installDoors(r.m, r.files)
}

// installDoors makes the listeners of a ready message (its files, which
// it closes) the sandbox's doors.
func (s *Sandbox) installDoors(m message, files []*os.File) error {
	if len(files) != len(m.Doors) || len(m.Doors) != len(s.cfg.Doors) {
		control.CloseAll(files)
		return fmt.Errorf("sandbox init sent %d doors and %d descriptors for %d doors asked", len(m.Doors), len(files), len(s.cfg.Doors))
	}
	doors := make(map[string]*net.TCPListener, len(m.Doors))
	for i, d := range m.Doors {
		l, err := net.FileListener(files[i])
		files[i].Close()
		if err != nil {
			control.CloseAll(files[i+1:])
			closeListeners(doors)
			return fmt.Errorf("door %s: %w", d.Name, err)
		}
		tl, ok := l.(*net.TCPListener)
		if !ok {
			l.Close()
			control.CloseAll(files[i+1:])
			closeListeners(doors)
			return fmt.Errorf("door %s is not a TCP listener", d.Name)
		}
		doors[d.Name] = tl
	}
	s.doorsMu.Lock()
	s.doors = doors
	s.doorsMu.Unlock()
	return nil
}

// closeDoors closes the sandbox's door listeners (Close, Recycle).
func (s *Sandbox) closeDoors() {
	s.doorsMu.Lock()
	defer s.doorsMu.Unlock()
	closeListeners(s.doors)
	s.doors = nil
}

func closeListeners(ls map[string]*net.TCPListener) {
	for _, l := range ls {
		l.Close()
	}
}

func (s *Sandbox) send(m message, files ...*os.File) error {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	err := send(s.ctl, m, fds...)
	for _, f := range files {
		runtime.KeepAlive(f)
	}
	return err
}

// watch reads the rest of the control channel and reaps the init.
func (s *Sandbox) watch() {
	for {
		m, files, err := receive(s.ctl)
		if err != nil {
			break
		}
		if pending := s.recycling.Load(); pending != nil && (m.Type == msgReady || m.Type == msgError) {
			*pending <- recycleReply{m, files} // its files are Recycle's now
			continue
		}
		r := s.cur.Load()
		if r == nil {
			control.CloseAll(files)
			continue
		}
		switch m.Type {
		case msgStarted:
			r.inner.Store(int64(m.Pid))
			if len(files) == 1 { // the harness's pidfd
				// Best effort: without it the harness keeps its weight.
				if g, pid, err := session.OpenPidfdGroup(files[0]); err == nil {
					r.group.Store(g)
					r.host.Store(int64(pid))
				}
			}
			r.reply(m)
		case msgError:
			r.reply(m)
		case msgExit:
			st := process.ExitStatus{Code: m.Code, Signal: m.Signal}
			if m.Signal != "" {
				st.Code = -1
			}
			r.finish(Exit{Status: st})
		}
		control.CloseAll(files)
	}
	s.initExit = Exit{InitDied: true, Status: s.init.Wait()}
	if r := s.cur.Load(); r != nil {
		r.reply(message{Type: msgError, Stage: StageInit, Error: "the init exited"})
		r.finish(s.initExit)
	}
	close(s.done)
}

func (r *Run) reply(m message) {
	select {
	case r.started <- m:
	default:
	}
}

// Doors returns the listeners opened inside, by name. The caller serves
// on them; Close closes them.
func (s *Sandbox) Doors() map[string]*net.TCPListener {
	s.doorsMu.RLock()
	defer s.doorsMu.RUnlock()
	out := make(map[string]*net.TCPListener, len(s.doors))
	for k, v := range s.doors {
		out[k] = v
	}
	return out
}

// Door returns one door's listener, nil when there is none of that name.
func (s *Sandbox) Door(name string) *net.TCPListener {
	s.doorsMu.RLock()
	defer s.doorsMu.RUnlock()
	return s.doors[name]
}

// Run starts a harness with cmd and returns once it has been executed (or
// could not be: the program is missing, the setup of its identity
// failed). Serve on the doors first. A sandbox runs one harness at a time:
// Run waits for the previous run to end (or ctx).
func (s *Sandbox) Run(ctx context.Context, cmd Command) (*Run, error) {
	if err := s.cfg.coveredByWorkspace(cmd.Path); err != nil {
		return nil, err
	}
	return s.run(ctx, cmd)
}

// run is Run but for the program's check (Launcher's is on the host path).
func (s *Sandbox) run(ctx context.Context, cmd Command) (*Run, error) {
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if prev := s.cur.Load(); prev != nil {
		select {
		case <-prev.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("start harness in sandbox: the previous run has not ended: %w", ctx.Err())
		}
	}
	select {
	case <-s.done:
		return nil, fmt.Errorf("start harness in sandbox: %w", process.ErrNotRunning)
	default:
	}
	if s.ids.mode == IDRange {
		// Files the daemon wrote since Start (agent settings, the MCP
		// config) belong to the harness too.
		for _, d := range []string{s.cfg.Workspace, s.cfg.Home} {
			if d == "" {
				continue
			}
			if err := s.Chown(d); err != nil {
				return nil, err
			}
		}
	}
	r := &Run{s: s, started: make(chan message, 1), done: make(chan struct{}), base: s.cg.counts()}
	s.cur.Store(r)
	names, files := cmd.stdio()
	if err := s.send(message{Type: msgGo, Command: &cmd, Stdio: names}, files...); err != nil {
		r.finish(Exit{InitDied: true, Status: process.ExitStatus{Code: -1, Signal: "unknown"}})
		return nil, err
	}
	select {
	case m := <-r.started:
		if m.Type == msgError {
			// The init has killed what the failed start left and waits for
			// the next go.
			r.finish(Exit{Status: process.ExitStatus{Code: 127}})
			return nil, &SetupError{Stage: m.Stage, Err: errors.New(m.Error)}
		}
	case <-ctx.Done():
		s.init.Kill() // the init's state is unknown now
		return nil, fmt.Errorf("start harness in sandbox: %w", ctx.Err())
	}
	return r, nil
}

// Chown gives path (and, for a directory, everything in it; symlinks are
// not followed) to the harness's host uid and gid, so that a file the
// daemon writes for the harness after Start is its own. It does nothing
// when the sandbox maps the daemon's own ids.
func (s *Sandbox) Chown(path string) error {
	if s.ids.mode != IDRange {
		return nil
	}
	uid, gid := s.HostIDs()
	return chownTree(path, uid, gid)
}

// HarnessPid returns the current run's harness pid on the host, 0 before
// Run or once it has ended.
func (s *Sandbox) HarnessPid() int {
	r := s.cur.Load()
	if r == nil {
		return 0
	}
	if _, ended := r.Exit(); ended {
		return 0
	}
	if pid := r.host.Load(); pid != 0 {
		return int(pid)
	}
	inner := r.InnerPid()
	if inner == 0 {
		return 0
	}
	for _, pid := range s.HostPids() {
		if InnerPid(pid) == inner {
			return pid
		}
	}
	return 0
}

// LastExit returns how the latest run ended, false while it runs or
// before any run.
func (s *Sandbox) LastExit() (Exit, bool) {
	if r := s.cur.Load(); r != nil {
		return r.Exit()
	}
	return Exit{}, false
}

// Pid is the init's pid on the host.
func (s *Sandbox) Pid() int { return s.initPid }

// PIDNamespace names the sandbox's PID namespace ("pid:[4026532…]").
func (s *Sandbox) PIDNamespace() string { return s.pidNS }

// HostIDs returns the host uid and gid the harness runs as.
func (s *Sandbox) HostIDs() (uid, gid int) {
	if s.ids.mode == IDRange {
		return int(s.ids.hostBase) + s.ids.uid, int(s.ids.hostBase) + s.ids.gid
	}
	return os.Geteuid(), os.Getegid()
}

// CgroupVersion says which cgroup carries the limits: CgroupV2, CgroupV1
// or CgroupNone.
func (s *Sandbox) CgroupVersion() string {
	if s.cg == nil {
		return CgroupNone
	}
	return s.cg.version
}

// CgroupDirs lists the sandbox's cgroup directories.
func (s *Sandbox) CgroupDirs() []string {
	if s.cg == nil {
		return nil
	}
	var out []string
	for _, d := range s.cg.dirs {
		out = append(out, d)
	}
	return out
}

// Signal sends sig to the init, which forwards SIGTERM, SIGINT and SIGHUP
// to the harness's process group; SIGKILL ends the whole sandbox.
func (s *Sandbox) Signal(sig syscall.Signal) error {
	select {
	case <-s.done:
		return process.ErrNotRunning
	default:
	}
	if err := s.init.Signal(sig); err != nil {
		return fmt.Errorf("signal sandbox init %d: %w", s.initPid, err)
	}
	return nil
}

// Done is closed once the sandbox has ended (its init is gone).
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Wait blocks until the latest run has ended (or, without one, the
// sandbox) and returns how.
func (s *Sandbox) Wait(ctx context.Context) (Exit, error) {
	if r := s.cur.Load(); r != nil {
		return r.Wait(ctx)
	}
	select {
	case <-s.done:
		return s.initExit, nil
	case <-ctx.Done():
		return Exit{}, ctx.Err()
	}
}

// Close ends the sandbox (SIGKILL to the init ends every process of its
// PID namespace), closes the doors and removes the cgroup. It is safe to
// call more than once.
func (s *Sandbox) Close() error {
	s.closed.Do(func() {
		s.init.Kill()
		<-s.done
		s.ctl.Close()
		s.closeDoors()
		if s.cg != nil {
			for deadline := time.Now().Add(2 * time.Second); !s.cg.empty() && time.Now().Before(deadline); {
				time.Sleep(2 * time.Millisecond)
			}
			s.closeErr = s.cg.remove()
		}
		s.ids.release()
	})
	return s.closeErr
}

// chownTree gives dir and everything in it to uid:gid (not following
// symlinks), so the harness's host uid can write its workspace and HOME.
// Each entry is chowned beneath dir (beneath.LchownTree), never by its
// path from the host's root: processes with the harness's ids may be
// alive while a run starts (a tool server's side sandbox has them and the
// workspace, and a one-shot agent's turn is a run of its own), and a
// directory they swapped for a link to a host directory made the daemon
// chown that directory's files.
func chownTree(dir string, uid, gid int) error {
	err := beneath.LchownTree(dir, func(uint32, uint32) (int, int, bool) { return uid, gid, true })
	if err != nil {
		return fmt.Errorf("give %s to the sandbox's uid %d: %w", dir, uid, err)
	}
	return nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 32 {
		b = b[:32]
	}
	return string(b)
}

func randomID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// HostPids lists the host pids of every process in the sandbox's PID
// namespace, the init included (empty once it has ended).
func (s *Sandbox) HostPids() []int { return procfs.PidsInNamespace(s.pidNS) }

// PidsInNamespace lists the host pids of the processes whose PID
// namespace is ns (as /proc/PID/ns/pid names it).
func PidsInNamespace(ns string) []int { return procfs.PidsInNamespace(ns) }

// InnerPid returns the pid inside its namespace of host pid (the last
// NSpid of /proc/PID/status), 0 when unknown.
func InnerPid(pid int) int { return procfs.InnerPid(pid) }
