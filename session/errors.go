package session

import (
	"errors"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/session/eventlog"
	"github.com/harnessd/harnessd/wire"
)

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
	// ErrNoUser: a step asked to play the episode to its end (PlayKey)
	// in an environment without a simulated user (user:).
	ErrNoUser = errors.New("playing an episode to its end needs a simulated user (user: in the configuration)")
	// ErrEpisodeIDInUse: a reset named the episode id of a live episode
	// (another session's, or another daemon's sharing record_dir) while
	// record_dir is set; the id may be reused once that episode has ended.
	ErrEpisodeIDInUse = eventlog.ErrEpisodeIDInUse
)

// wireExit converts an exit status to its observation form: the one place
// where process's exit status meets the wire schema.
func wireExit(st *process.ExitStatus) *wire.ExitStatus {
	if st == nil {
		return nil
	}
	return &wire.ExitStatus{Code: st.Code, Signal: st.Signal}
}
