package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/session"
	"github.com/harnessd/harnessd/process/sandbox/internal/control"
	"github.com/harnessd/harnessd/process/sandbox/internal/loopback"
	"github.com/harnessd/harnessd/process/sandbox/internal/spawner"
	"github.com/harnessd/harnessd/process/sandbox/internal/tenancy"
)

// Hidden subcommands the init binary is re-executed with (argv[1]).
const (
	initCommand  = "__sandbox-init"
	probeCommand = "__sandbox-probe"
)

// controlFD is the control socket in the init.
const controlFD = 3

// Init runs the sandbox's init (or Probe's harness) when this process was
// re-executed as one (argv[1] is a hidden subcommand) and never returns
// then; otherwise it returns at once. Call it first thing in main (and in
// TestMain of tests that start sandboxes).
func Init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case initCommand:
		os.Exit(runInit())
	case probeCommand:
		os.Exit(runProbeChild())
	case spawner.Command:
		os.Exit(spawner.Run())
	}
}

// initFail reports a setup failure to the host and returns the init's exit
// code.
func initFail(ctl *net.UnixConn, stage string, err error) int {
	if ctl != nil {
		send(ctl, message{Type: msgError, Stage: stage, Error: err.Error()})
	}
	fmt.Fprintf(os.Stderr, "harnessd sandbox init: %s: %v\n", stage, err)
	return 125
}

// dropLethalSignals keeps the signals the Go runtime dies of even when
// kill(2) sent them (SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGSTKFLT,
// SIGSYS) from ending the init: its runtime handles every signal, so the
// kernel's shield for a namespace's init (a signal from inside gets
// through only if the init handles it) does not stop them, and with the
// single id map the harness, uid 0 inside like the init, may send them.
// Notified to a channel nobody reads, they are dropped; a real fault
// still crashes the init.
func dropLethalSignals() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP,
		syscall.SIGABRT, syscall.SIGSTKFLT, syscall.SIGSYS)
}

// runInit is PID 1 of the sandbox.
func runInit() int {
	// The init's work is serial (a run at a time, its signals, its
	// control socket): one P spares the machine the runtime's idle Ps
	// spinning for work and its GC's parallel marking, on the cores the
	// harnesses need (a sandbox's init started in every reset).
	runtime.GOMAXPROCS(1)
	// Nothing in the sandbox may read the init's memory or descriptors.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// The init leads a session of its own (the spawner's Setsid), as each
	// harness does (package session); giving up a controlling terminal,
	// which it then has none of, stays as a second line.
	if err := session.DropControllingTerminal(); err != nil {
		return initFail(nil, StageInit, err)
	}
	// The harness gets its stdio and no other descriptor: those the
	// daemon itself inherited without close-on-exec (from its parent: a
	// shell's, a terminal) came through to the init. The control socket
	// is wrapped (control.Conn) by a close-on-exec duplicate.
	if err := unix.CloseRange(controlFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return initFail(nil, StageInit, fmt.Errorf("close inherited descriptors on exec: %w", err))
	}
	// No core dumps in the sandbox: every process of it inherits this.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return initFail(nil, StageInit, fmt.Errorf("setrlimit core: %w", err))
	}
	ctl, err := control.Conn(os.NewFile(controlFD, "sandbox-control"))
	if err != nil {
		return initFail(nil, StageInit, err)
	}
	// SIGCHLD and the forwarded signals are caught before anything forks.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	dropLethalSignals()

	m, files, err := receive(ctl)
	control.CloseAll(files)
	if err != nil || m.Type != msgSpec || m.Spec == nil {
		return initFail(ctl, StageInit, fmt.Errorf("no spec from the daemon (%v)", err))
	}
	spec := *m.Spec
	doors, err := openDoors(spec.Doors, spec.HostNetwork)
	if err != nil {
		return initFail(ctl, StageNet, err)
	}
	if stage, err := buildRoot(spec.Mounts); err != nil {
		return initFail(ctl, stage, err)
	}
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return initFail(ctl, StageUTS, fmt.Errorf("sethostname: %w", err))
	}
	// The empty read-only /sys is where an mqueue file system is looked
	// into, where the kernel cannot keep one mounted nowhere.
	tenant, err := tenancy.Note(scratchMounts(spec.Mounts.Storage), "/sys")
	if err != nil {
		return initFail(ctl, StageMounts, err)
	}
	if err := sendDoors(ctl, doors); err != nil {
		return initFail(nil, StageInit, err)
	}

	return serveRuns(ctl, spec, tenant, sigs)
}

// sendDoors sends a ready message with doors attached and closes them.
func sendDoors(ctl *net.UnixConn, doors []loopback.Door) error {
	opened := make([]doorOpened, len(doors))
	fds := make([]int, len(doors))
	for i, d := range doors {
		opened[i] = doorOpened{Name: d.Name, Addr: d.Addr}
		fds[i] = int(d.File.Fd())
	}
	err := send(ctl, message{Type: msgReady, Doors: opened}, fds...)
	for _, d := range doors {
		d.File.Close()
	}
	return err
}

// serveRuns starts one harness per go message, in turn, until the daemon
// closes the channel: each run ends when its harness exits, and then every
// other process of the namespace is killed before its exit is reported, so
// nothing of one run outlives it. A recycle message between runs puts the
// sandbox back to new for a later tenant (recycleInside).
func serveRuns(ctl *net.UnixConn, spec initSpec, tenant *tenancy.State, sigs <-chan os.Signal) int {
	harnesses := startForker(spec)
	for {
		m, files, err := receive(ctl)
		if err == nil && m.Type == msgRecycle {
			control.CloseAll(files)
			if sendRecycled(ctl, spec, tenant) != nil {
				return 0
			}
			continue
		}
		if err != nil || m.Type != msgGo || m.Command == nil || len(files) != len(m.Stdio) {
			// The daemon closed the sandbox.
			control.CloseAll(files)
			return 0
		}
		// A signal sent while no harness ran is not the next one's.
		for len(sigs) > 0 {
			<-sigs
		}
		harness, pidfd, err := harnesses.start(spec, *m.Command, runStdio(m.Stdio, files))
		control.CloseAll(files)
		if err == nil {
			err = superviseRun(ctl, harness, pidfd, sigs)
		} else {
			reportRunError(ctl, err)
		}
		if errors.Is(err, errChannelGone) {
			return 0
		}
	}
}

// sendRecycled recycles the sandbox and sends the new doors (a ready
// message) or why it could not be recycled (an error message).
func sendRecycled(ctl *net.UnixConn, spec initSpec, tenant *tenancy.State) error {
	doors, err := recycleInside(spec, tenant)
	if err != nil {
		return send(ctl, message{Type: msgError, Stage: StageRecycle, Error: err.Error()})
	}
	return sendDoors(ctl, doors)
}

// errChannelGone reports a control channel that took no more messages.
var errChannelGone = errors.New("the daemon's control channel is gone")

// runStdio is the harness's stdio: the go message's files by name, the
// init's own for the rest.
func runStdio(names []string, files []*os.File) []*os.File {
	stdio := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i, name := range names {
		for j, n := range stdioNames {
			if n == name {
				stdio[j] = files[i]
			}
		}
	}
	return stdio
}

// reportRunError tells the daemon why a run's harness did not start, and
// kills what the attempt left.
func reportRunError(ctl *net.UnixConn, err error) {
	var se *SetupError
	stage := StageExec
	if errors.As(err, &se) {
		stage, err = se.Stage, se.Err
	}
	send(ctl, message{Type: msgError, Stage: stage, Error: err.Error()})
	fmt.Fprintf(os.Stderr, "harnessd sandbox init: %s: %v\n", stage, err)
	tenancy.KillRest()
}

// superviseRun reports the harness started (with pidfd, which it closes,
// attached: the daemon finds the harness on the host by it, without a
// scan), reaps until it exits, kills the rest of the namespace and reports
// the exit; errChannelGone when the daemon cannot be told.
func superviseRun(ctl *net.UnixConn, harness, pidfd int, sigs <-chan os.Signal) error {
	err := send(ctl, message{Type: msgStarted, Pid: harness}, pidfd)
	unix.Close(pidfd)
	if err != nil {
		return errChannelGone
	}
	exit := superviseHarness(harness, sigs)
	tenancy.KillRest()
	if err := send(ctl, exit); err != nil {
		return errChannelGone
	}
	return nil
}

// superviseHarness reaps every child until the harness exits, forwarding
// signals to its process group, and returns its exit message.
func superviseHarness(harness int, sigs <-chan os.Signal) message {
	// A SIGCHLD dropped by a full channel is made up for by the tick.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case sig := <-sigs:
			if sig != syscall.SIGCHLD {
				unix.Kill(-harness, sig.(syscall.Signal))
				continue
			}
		case <-tick.C:
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			if pid != harness {
				continue
			}
			m := message{Type: msgExit}
			if ws.Signaled() {
				m.Code, m.Signal = -1, unix.SignalName(ws.Signal())
			} else {
				m.Code = ws.ExitStatus()
			}
			return m
		}
	}
}
