package process

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sentinel errors callers branch on.
var (
	// ErrNotRunning is returned by writes to a process that has exited or
	// whose stdin is closed.
	ErrNotRunning = errors.New("process is not running")
	// ErrStopped is returned by operations on a process that Stop has ended.
	ErrStopped = errors.New("process was stopped")
)

// ExitStatus is how a process ended: an exit code, or the signal that killed it.
type ExitStatus struct {
	// Code is the exit code, or -1 when the process was killed by a signal.
	Code int `json:"code"`
	// Signal names the killing signal (e.g. "SIGKILL"), empty for a normal exit.
	Signal string `json:"signal,omitempty"`
}

// Signaled reports whether the process was killed by a signal.
func (e ExitStatus) Signaled() bool { return e.Signal != "" }

func (e ExitStatus) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exited with code %d", e.Code)
}

func exitFromWaitStatus(ws syscall.WaitStatus) ExitStatus {
	switch {
	case ws.Exited():
		return ExitStatus{Code: ws.ExitStatus()}
	case ws.Signaled():
		return ExitStatus{Code: -1, Signal: unix.SignalName(ws.Signal())}
	default:
		return ExitStatus{Code: -1, Signal: "unknown"}
	}
}

// StartFailure classifies why a process did not become ready.
type StartFailure string

// Start failure reasons.
const (
	FailSpawn     StartFailure = "spawn"     // the program could not be executed
	FailExited    StartFailure = "exited"    // it exited (or closed stdout) before ready
	FailTimeout   StartFailure = "timeout"   // the start-up deadline passed
	FailCancelled StartFailure = "cancelled" // the caller's context was cancelled
	FailOutput    StartFailure = "output"    // it wrote more than Spec.MaxStartupBytes before ready
)

// StartupOutputError is a child that wrote more than Limit bytes of output
// while it was not ready yet (Spec.MaxStartupBytes).
type StartupOutputError struct {
	// Limit is the bound that was passed.
	Limit int64
}

func (e *StartupOutputError) Error() string {
	return fmt.Sprintf("wrote more than %d bytes of output before it was ready", e.Limit)
}

// StartError reports a process that failed to spawn or to become ready. It
// carries what is known about the child for diagnostics.
type StartError struct {
	Name       string
	Reason     StartFailure
	Err        error       // underlying error (spawn error, context error), may be nil
	Exit       *ExitStatus // set when the child's end is known
	StderrTail string      // last lines of stderr, possibly empty
}

func (e *StartError) Error() string {
	var b strings.Builder
	name := e.Name
	if name == "" {
		name = "process"
	}
	switch e.Reason {
	case FailSpawn:
		fmt.Fprintf(&b, "failed to spawn %s: %v", name, e.Err)
	case FailExited:
		if e.Exit != nil {
			fmt.Fprintf(&b, "%s %s during startup", name, e.Exit)
		} else {
			fmt.Fprintf(&b, "%s closed its output during startup", name)
		}
	case FailTimeout:
		fmt.Fprintf(&b, "%s did not become ready", name)
		if e.Err != nil {
			fmt.Fprintf(&b, ": %v", e.Err)
		}
	case FailCancelled:
		fmt.Fprintf(&b, "%s start-up cancelled: %v", name, e.Err)
	case FailOutput:
		fmt.Fprintf(&b, "%s %v", name, e.Err)
	default:
		fmt.Fprintf(&b, "%s failed to start: %v", name, e.Err)
	}
	if e.StderrTail != "" {
		b.WriteString("; stderr tail:\n")
		b.WriteString(strings.TrimRight(e.StderrTail, "\n"))
	}
	return b.String()
}

func (e *StartError) Unwrap() error { return e.Err }
