package session

import (
	"strconv"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/wire"
)

// turnBudget is how long a turn may run and what running out means.
type turnBudget struct {
	// d is the turn's deadline, from now.
	d time.Duration
	// limit classifies running out: turn_timeout, or episode_timeout when
	// the episode's remaining budget is the shorter one.
	limit wire.FailureType
	// episode is the episode's whole budget, for episode_timeout's message.
	episode units.Duration
}

// turnBudget computes the budget of a turn in r: the configured turn
// timeout (or the step's own, when given), cut to what is left of the
// episode's budget.
func (s *Session) turnBudget(r *run, stepTimeout time.Duration) turnBudget {
	d := s.cfg.Episode.TurnTimeout.D()
	if stepTimeout > 0 {
		d = stepTimeout
	}
	b := turnBudget{d: d, limit: wire.FailureTurnTimeout}
	if !r.deadline.IsZero() {
		if left := time.Until(r.deadline); left < d {
			b = turnBudget{d: left, limit: wire.FailureEpisodeTimeout, episode: s.episodeBudget(r)}
		}
	}
	return b
}

// exceeded is the failure of a turn that ran out of its budget. Its message
// is written only then, not at every turn's start (issue 28).
func (b turnBudget) exceeded() *harness.Failure {
	if b.limit == wire.FailureEpisodeTimeout {
		return harness.Fail(b.limit, "episode exceeded %s (episode.episode_timeout)", b.episode.String())
	}
	return harness.Fail(b.limit, "harness turn exceeded %s seconds", formatSeconds(b.d))
}

// formatSeconds prints a duration in seconds the way Python prints floats
// (600.0, 0.05), matching the reference's timeout message.
func formatSeconds(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	for _, c := range s {
		if c == '.' || c == 'e' {
			return s
		}
	}
	return s + ".0"
}
