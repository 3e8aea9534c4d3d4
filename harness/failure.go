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

// ErrNoTurn is returned by Adapter.Interrupt when no turn is under way
// (not yet live, or already over); the session's Interrupt waits for
// TurnInput.MarkLive before asking.
var ErrNoTurn = errors.New("no turn is running")
