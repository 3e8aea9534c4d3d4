package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Hidden subcommands the init binary is re-executed with (argv[1]).
const (
	initCommand  = "__sandbox-init"
	execCommand  = "__sandbox-exec"
	probeCommand = "__sandbox-probe"
)

// controlFD is the control socket in the init, the exec-stage socket in the
// exec stage.
const controlFD = 3

// Init runs the sandbox's init or its exec stage when this process was
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
	case execCommand:
		os.Exit(runExec())
	case probeCommand:
		os.Exit(runProbeChild())
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

// runInit is PID 1 of the sandbox.
func runInit() int {
	// Nothing in the sandbox may read the init's memory or descriptors.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	ctl, err := controlConn(os.NewFile(controlFD, "sandbox-control"))
	if err != nil {
		return initFail(nil, StageInit, err)
	}
	// SIGCHLD and the forwarded signals are caught before anything forks.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	m, files, err := receive(ctl)
	closeAll(files)
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
	opened := make([]doorOpened, len(doors))
	fds := make([]int, len(doors))
	for i, d := range doors {
		opened[i] = doorOpened{Name: d.name, Addr: d.addr}
		fds[i] = int(d.file.Fd())
	}
	err = send(ctl, message{Type: msgReady, Doors: opened}, fds...)
	for _, d := range doors {
		d.file.Close()
	}
	if err != nil {
		return initFail(nil, StageInit, err)
	}

	return serveRuns(ctl, spec, sigs)
}

// serveRuns starts one harness per go message, in turn, until the daemon
// closes the channel: each run ends when its harness exits, and then every
// other process of the namespace is killed before its exit is reported, so
// nothing of one run outlives it.
func serveRuns(ctl *net.UnixConn, spec initSpec, sigs <-chan os.Signal) int {
	for {
		m, files, err := receive(ctl)
		if err != nil || m.Type != msgGo || m.Command == nil || len(files) != len(m.Stdio) {
			// The daemon closed the sandbox.
			closeAll(files)
			return 0
		}
		// A signal sent while no harness ran is not the next one's.
		for len(sigs) > 0 {
			<-sigs
		}
		stdio := []*os.File{os.Stdin, os.Stdout, os.Stderr}
		for i, name := range m.Stdio {
			for j, n := range stdioNames {
				if n == name {
					stdio[j] = files[i]
				}
			}
		}
		harness, err := startExecStage(execSpec{Spec: spec, Command: *m.Command}, stdio)
		closeAll(files)
		if err != nil {
			var se *SetupError
			stage := StageExec
			if errors.As(err, &se) {
				stage, err = se.Stage, se.Err
			}
			send(ctl, message{Type: msgError, Stage: stage, Error: err.Error()})
			fmt.Fprintf(os.Stderr, "harnessd sandbox init: %s: %v\n", stage, err)
			killRest()
			continue
		}
		if err := send(ctl, message{Type: msgStarted, Pid: harness}); err != nil {
			return 0
		}
		exit := superviseHarness(harness, sigs)
		killRest()
		if err := send(ctl, exit); err != nil {
			return 0
		}
	}
}

// killRest kills every process of the namespace but the init (kill(-1)
// from PID 1 spares only itself) and reaps them all.
func killRest() {
	unix.Kill(-1, unix.SIGKILL)
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil { // ECHILD: nothing left
			return
		}
	}
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

// startExecStage forks the exec stage (this binary again) in a new session
// and hands it its spec; it returns the harness's pid once the exec stage
// has executed the harness, or the stage's error.
func startExecStage(es execSpec, stdio []*os.File) (int, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("exec socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "exec-stage"), os.NewFile(uintptr(pair[1]), "exec-stage-child")
	defer mine.Close()
	attr := &syscall.SysProcAttr{Setsid: true}
	if es.Spec.TTY || es.Command.TTY {
		attr.Setctty, attr.Ctty = true, 0
	}
	p, err := os.StartProcess("/proc/self/exe", []string{"harnessd-sandbox-exec", execCommand}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{},
		Files: []*os.File{stdio[0], stdio[1], stdio[2], theirs},
		Sys:   attr,
	})
	theirs.Close()
	if err != nil {
		return 0, fmt.Errorf("fork exec stage: %w", err)
	}
	pid := p.Pid
	p.Release() // reaped by superviseHarness's wait4(-1)
	if err := json.NewEncoder(mine).Encode(es); err != nil {
		return 0, fmt.Errorf("hand the exec stage its spec: %w", err)
	}
	unix.Shutdown(int(mine.Fd()), unix.SHUT_WR)
	// EOF without a word: the harness was executed (the socket is
	// close-on-exec in the exec stage). A word is its error.
	var se struct {
		Stage string `json:"stage"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(mine).Decode(&se); err == nil && se.Error != "" {
		return 0, &SetupError{Stage: se.Stage, Err: errors.New(se.Error)}
	}
	return pid, nil
}
