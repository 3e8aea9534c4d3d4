package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/process/internal/cgtree"
	"github.com/harnessd/harnessd/process/internal/linereader"
	"github.com/harnessd/harnessd/process/internal/pipewrite"
)

// TreeEnvVar is set in every child's environment to a value unique to its
// tree. It lets Stop find descendants that left the process group and lost
// their parent when no cgroup is available.
const TreeEnvVar = "HARNESSD_TREE"

// Line is one line of a child's stdout, without its line ending (a newline,
// and a CR before it).
type Line struct {
	// Text is the line, the caller's own copy; when TooLong is set it is
	// only a prefix.
	Text []byte
	// TooLong reports a line longer than Spec.MaxLineBytes.
	TooLong bool
	// Size is the full length of the line in bytes (a trimmed CR counts).
	Size int
}

// Process is one supervised process tree. Its methods are safe for
// concurrent use. Every started Process must be stopped with Stop.
type Process struct {
	spec Spec
	sup  *Supervisor
	log  *slog.Logger
	pid  int
	// launched is set once pid (and startTicks, leaf and tree) hold the
	// started leader's; until then nothing may be signalled or swept in the
	// tree's name.
	launched atomic.Bool
	treeID   string
	leaf     *cgtree.Leaf
	tree     LaunchedTree // set when Spec.Launcher started the leader
	settler  SettlingTree // tree, when it settles; set with tree
	settled  sync.Once    // settler's Settle, before the first input

	stdin  *os.File // pipe mode
	stdout *os.File // pipe mode read end
	stderr *os.File
	ptmx   *os.File // pty mode

	stderrDone chan struct{}      // closed when the stderr reader has finished
	lr         *linereader.Reader // StdioLines: read by ReadLine, or by Lines' goroutine
	rmu        sync.Mutex         // held while lr reads
	linesOn    atomic.Bool        // Lines was called: lr is its goroutine's
	linesOnce  sync.Once
	lines      chan Line // Lines' channel, made by its first call
	ioMu       sync.Mutex
	ioDone     bool        // releaseIO began: no reader may start
	output     chan []byte // PTY
	raw        io.Reader   // StdioRaw
	outN       atomic.Int64
	recorded   memberSet // members seen by the tracker (by ancestry and cgroup leaf)
	escaped    memberSet // recorded members found outside the daemon's cgroup directory
	startTicks uint64    // the leader's start time (clock ticks since boot)
	tail       *Tail
	readers    sync.WaitGroup

	writeMu chan struct{}     // one writer at a time; a waiting Write keeps its ctx
	fast    *pipewrite.Writer // Write's first attempt, holding writeMu; nil: none

	exited   chan struct{}
	exit     ExitStatus
	closing  chan struct{} // closed when Stop starts tearing down readers
	stopOnce sync.Once
	stopped  chan struct{}
	stopErr  error
}

// Start spawns the program of spec. It returns a *StartError with Reason
// FailSpawn if the program cannot be executed. The process is not yet known
// to be ready: see WaitReady.
func (s *Supervisor) Start(spec Spec) (*Process, error) {
	spec = spec.withDefaults()
	p := &Process{
		spec:    spec,
		sup:     s,
		tail:    NewTail(spec.StderrTailLines, spec.StderrTailBytes),
		exited:  make(chan struct{}),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
		writeMu: make(chan struct{}, 1),
	}
	if err := s.track(p); err != nil {
		return nil, &StartError{Name: spec.Name, Reason: FailSpawn, Err: err}
	}
	// A tree that never started (start failed, or panicked) must not stay
	// tracked: with pid 0, Close would signal process group 0 — the
	// caller's own.
	started := false
	defer func() {
		if !started {
			s.untrack(p)
		}
	}()
	if err := p.start(); err != nil {
		return nil, &StartError{Name: spec.Name, Reason: FailSpawn, Err: err}
	}
	started = true
	return p, nil
}

func newTreeID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lookPath resolves file against the PATH of env, as the child would.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathVar, ok := lookEnv(env, "PATH")
	if !ok {
		pathVar = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: %w", file, exec.ErrNotFound)
}

// Name returns the Spec name.
func (p *Process) Name() string { return p.spec.Name }

// Pid returns the pid of the tree's leader; it is also the process group id.
func (p *Process) Pid() int { return p.pid }

// KillMode names the mechanism this tree is killed with.
func (p *Process) KillMode() string {
	if p.tree != nil {
		return "sandbox"
	}
	if p.leaf != nil {
		return "cgroup"
	}
	if p.sup.mech.Subreaper {
		return "subreaper+pgroup"
	}
	return "pgroup"
}

// Exited is closed when the leader has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Alive reports whether the leader is still running.
func (p *Process) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
	}
	if p.tree != nil {
		return true // exited closes when the launched tree is gone
	}
	// The leader may have exited, or even been reaped, while waitExit has
	// not closed exited yet: ask the kernel without reaping, so that a
	// harness gone between turns is never taken for a live one.
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	switch {
	case err == nil:
		return info.Signo == 0 // no state change to report: still running
	case errors.Is(err, unix.ECHILD): // already reaped by waitExit
		return false
	}
	return true
}

// ExitStatus returns the leader's exit status once it has exited. It agrees
// with Alive: when Alive has seen the exit (from the kernel) before the
// status was collected, ExitStatus waits briefly for it instead of claiming
// the process still runs.
func (p *Process) ExitStatus() (ExitStatus, bool) {
	select {
	case <-p.exited:
		return p.exit, true
	default:
	}
	if p.Alive() {
		return ExitStatus{}, false
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-p.exited:
		return p.exit, true
	case <-t.C:
		return ExitStatus{}, false
	}
}

// Wait blocks until the leader exits or ctx ends.
func (p *Process) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-p.exited:
		return p.exit, nil
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

// stderrSettle bounds how long StderrTail waits, after the leader exited,
// for the rest of stderr to be read.
const stderrSettle = 250 * time.Millisecond

// StderrTail returns the kept end of stderr (in PTY mode: of the terminal
// output). Once the leader has exited it first lets the stderr reader catch
// up (briefly), so a crash's last words are not lost to a race.
func (p *Process) StderrTail() string {
	if p.stderrDone != nil && !p.Alive() {
		t := time.NewTimer(stderrSettle)
		select {
		case <-p.stderrDone:
		case <-t.C:
		}
		t.Stop()
	}
	return p.tail.String()
}

// OutputBytes returns how many bytes of stdout (or terminal output) have been
// read so far. Callers compute per-turn budgets from differences.
func (p *Process) OutputBytes() int64 { return p.outN.Load() }

// Output delivers terminal output chunks in PTY mode; it is closed when the
// terminal hangs up. It is nil in pipe mode.
func (p *Process) Output() <-chan []byte { return p.output }

// Stdout returns the raw stdout reader in StdioRaw mode, else nil.
func (p *Process) Stdout() io.Reader { return p.raw }

// Stdin returns the child's stdin as a writer (the pty in PTY mode). Prefer
// Write/WriteLine, which honour contexts.
func (p *Process) Stdin() io.Writer {
	p.settle()
	if p.ptmx != nil {
		return p.ptmx
	}
	return p.stdin
}

// settle settles a SettlingTree, once, before the leader's first input.
func (p *Process) settle() {
	if p.settler != nil {
		p.settled.Do(p.settler.Settle)
	}
}

// Resize changes the terminal size in PTY mode.
func (p *Process) Resize(rows, cols uint16) error {
	if p.ptmx == nil {
		return errors.New("process has no terminal")
	}
	return pty.Setsize(p.ptmx, &pty.Winsize{Rows: rows, Cols: cols})
}
