package session

import (
	"errors"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
)

// ErrSamplingNeedsEngine refuses a reset's sampling pin without an engine
// upstream: a passthrough forwards requests as they are.
var ErrSamplingNeedsEngine = errors.New("a sampling pin needs harness.model.upstream: engine (a passthrough forwards the agent's requests as they are)")

// SetPolicyVersion sets the session's policy version: its episodes' model
// calls are stamped with it from now on, until it or the daemon's version
// (Options.Policy) is set again.
func (s *Session) SetPolicyVersion(v int64) { s.policy.Set(v) }

// PolicyVersion returns the session's effective policy version.
func (s *Session) PolicyVersion() int64 { return s.policy.Version() }

// resetSampling returns the sampling pin of the episode opts starts: the
// configured harness.model.sampling with the reset's override merged over
// it.
func (s *Session) resetSampling(opts ResetOptions) (*gateway.Sampling, error) {
	m := &s.cfg.Harness.Model
	if opts.Sampling == nil {
		return m.Sampling, nil
	}
	if !m.Enabled() || m.UpstreamKind() != config.ModelUpstreamEngine {
		return nil, ErrSamplingNeedsEngine
	}
	pin := m.Sampling.Merge(opts.Sampling)
	if err := pin.Validate(); err != nil {
		return nil, &SamplingError{Err: err}
	}
	return pin, nil
}

// SamplingError is a reset's sampling override the gateway refuses.
type SamplingError struct{ Err error }

func (e *SamplingError) Error() string { return "sampling: " + e.Err.Error() }

// Unwrap returns the reason.
func (e *SamplingError) Unwrap() error { return e.Err }
