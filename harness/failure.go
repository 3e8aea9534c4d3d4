package harness

import (
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/process"
)

// ErrorType classifies a terminal observation (metadata.error_type).
type ErrorType string

// Error types of terminal observations.
const (
	ErrStartupFailed  ErrorType = "startup_failed"  // the harness did not start or become ready
	ErrTurnTimeout    ErrorType = "turn_timeout"    // a turn exceeded its budget
	ErrHarnessCrashed ErrorType = "harness_crashed" // the harness died during a turn
	ErrHarnessExited  ErrorType = "harness_exited"  // the harness was gone before a turn began
	ErrProtocol       ErrorType = "protocol_error"  // the harness broke its protocol
	ErrOutputLimit    ErrorType = "output_limit"    // the harness flooded its output
	ErrEpisodeTimeout ErrorType = "episode_timeout" // the episode's wall-clock budget ran out
	ErrMaxTurns       ErrorType = "max_turns"       // the episode reached its turn limit
	ErrCancelled      ErrorType = "cancelled"       // the turn was abandoned (client gone, shutdown)
)

// Failure is an error that ends an episode, reported in its observation.
// Adapters return it to classify what went wrong; the session fills in the
// exit status and stderr tail.
type Failure struct {
	Type       ErrorType
	Message    string
	Exit       *process.ExitStatus
	StderrTail string
	Err        error
}

// Fail returns a Failure of type t with a formatted message.
func Fail(t ErrorType, format string, a ...any) *Failure {
	return &Failure{Type: t, Message: fmt.Sprintf(format, a...)}
}

// Wrap returns a Failure of type t caused by err.
func Wrap(t ErrorType, err error, format string, a ...any) *Failure {
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
	ErrNoEpisode = errors.New("No active episode; call reset() before step()")
	// ErrEpisodeDone: Step after the episode finished.
	ErrEpisodeDone = errors.New("episode is done; call reset() to start a new one")
	// ErrBusy: a turn or reset is already running on this session.
	ErrBusy = errors.New("session is busy with another turn or reset")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("session is closed")
	// ErrNoTurn is returned by Adapter.Interrupt when no turn is under way
	// (not yet begun, or already over); the session then retries while its
	// step is still starting.
	ErrNoTurn = errors.New("no turn is running")
)
