package evaljob

import (
	"slices"

	"github.com/harnessd/harnessd/wire"
)

// DefaultRetryTypes are the error types retried unless the job says
// otherwise: failures of the infrastructure around a trial, which say
// nothing about the agent — its session or episode could not be made, its
// harness did not start, its turn could not be run, the oracle's runs
// could not be started. A graded trial (one with a reward, even after a
// harness crash or a timeout) is never retried, whatever the policy: its
// failure is the agent's result.
var DefaultRetryTypes = []string{
	ErrSetup, ErrReset, string(wire.FailureStartupFailed), ErrStep, ErrOracle,
	string(wire.FailureHarnessExited), string(wire.FailureCancelled),
}

// DefaultMaxRetries is how many times a trial is retried by default.
const DefaultMaxRetries = 2

// RetryPolicy says which failed trials are run again.
type RetryPolicy struct {
	// Include are the error types retried; empty means DefaultRetryTypes.
	Include []string `json:"include,omitempty"`
	// Exclude are error types never retried (they win over Include).
	Exclude []string `json:"exclude,omitempty"`
	// MaxRetries is how many times one trial may be retried (0: never).
	MaxRetries int `json:"max_retries"`
}

// retry reports whether r, after retries tries already retried, is run
// again.
func (p *RetryPolicy) retry(r *Result, retries int) bool {
	if r.Ran() || retries >= p.MaxRetries || r.ErrorType == "" {
		return false
	}
	inc := p.Include
	if len(inc) == 0 {
		inc = DefaultRetryTypes
	}
	return slices.Contains(inc, r.ErrorType) && !slices.Contains(p.Exclude, r.ErrorType)
}
