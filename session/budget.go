package session

import (
	"strconv"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// turnBudget is how long a turn may run and what running out means.
type turnBudget struct {
	// d is the turn's deadline, from now.
	d time.Duration
	// limit classifies running out: turn_timeout, or episode_timeout when
	// the episode's remaining budget is the shorter one.
	limit wire.FailureType
	// message says what ran out.
	message string
}

// turnBudget computes the budget of a turn in r: the configured turn
// timeout (or the step's own, when given), cut to what is left of the
// episode's budget.
func (s *Session) turnBudget(r *run, stepTimeout time.Duration) turnBudget {
	d := s.cfg.Episode.TurnTimeout.D()
	if stepTimeout > 0 {
		d = stepTimeout
	}
	b := turnBudget{d: d, limit: wire.FailureTurnTimeout, message: "harness turn exceeded " + formatSeconds(d) + " seconds"}
	if !r.deadline.IsZero() {
		if left := time.Until(r.deadline); left < d {
			b = turnBudget{d: left, limit: wire.FailureEpisodeTimeout, message: "episode exceeded " + s.episodeBudget(r).String()}
		}
	}
	return b
}

// exceeded is the failure of a turn that ran out of its budget.
func (b turnBudget) exceeded() *harness.Failure { return harness.Fail(b.limit, "%s", b.message) }

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
