package harness

import (
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Failure is an error that ends an episode, reported in its observation.
// Adapters return it to classify what went wrong; the session fills in the
// exit status and stderr tail.
type Failure struct {
	// Type classifies the failure (the observation's error_type).
	Type wire.FailureType
	// Message says what happened.
	Message string
	// Exit is the harness's exit status, when known.
	Exit *process.ExitStatus
	// StderrTail is the end of the harness's stderr, when known.
	StderrTail string
	// Err is the cause, if any.
	Err error
}

// Fail returns a Failure of type t with a formatted message.
func Fail(t wire.FailureType, format string, a ...any) *Failure {
	return &Failure{Type: t, Message: fmt.Sprintf(format, a...)}
}

// Wrap returns a Failure of type t caused by err.
func Wrap(t wire.FailureType, err error, format string, a ...any) *Failure {
	msg := fmt.Sprintf(format, a...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Failure{Type: t, Message: msg, Err: err}
}

func (f *Failure) Error() string { return string(f.Type) + ": " + f.Message }

func (f *Failure) Unwrap() error { return f.Err }

// AsFailure returns err's Failure, if it has one.
func AsFailure(err error) (*Failure, bool) {
	var f *Failure
	ok := errors.As(err, &f)
	return f, ok
}

// Errors returned by Session methods for misuse. They leave the session usable.
var (
	// ErrNoEpisode: Step before Reset, or after a failure ended the episode.
	//lint:ignore ST1005 the text of OpenEnv's reference server, which clients match on
	ErrNoEpisode = errors.New("No active episode; call reset() before step()")
	// ErrEpisodeDone: Step after the episode finished.
	ErrEpisodeDone = errors.New("episode is done; call reset() to start a new one")
	// ErrBusy: a turn or reset is already running on this session.
	ErrBusy = errors.New("session is busy with another turn or reset")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("session is closed")
	// ErrNoTurn is returned by Adapter.Interrupt when no turn is under way
	// (not yet live, or already over); the session's Interrupt waits for
	// TurnInput.MarkLive before asking.
	ErrNoTurn = errors.New("no turn is running")
)

// wireExit converts an exit status to its observation form: the one place
// where process's exit status meets the wire schema.
func wireExit(st *process.ExitStatus) *wire.ExitStatus {
	if st == nil {
		return nil
	}
	return &wire.ExitStatus{Code: st.Code, Signal: st.Signal}
}
