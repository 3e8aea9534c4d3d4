package server

import (
	"context"
	"time"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// An episode's end is counted exactly once, by whoever clears
// managed.episodeOpen: the operation whose observation is done, the reset
// that replaces it, or the session's end. While an operation runs
// (managed.ops > 0) the session's end leaves the count to the operation,
// whose observation says how the episode ended (e.g. cancelled).

// reset runs a session's Reset for any surface: it refuses new work while
// draining, and records the reset's duration and the episodes it ends and
// starts.
func (s *Server) reset(ctx context.Context, m *managed, opts session.ResetOptions) (*wire.Observation, error) {
	if s.isDraining() {
		return nil, errDraining
	}
	m.ops.Add(1)
	defer s.opDone(m)
	m.touch()
	start := time.Now()
	obs, err := m.sess.Reset(ctx, opts)
	m.touch()
	if err != nil {
		return nil, err
	}
	s.metrics.resetSeconds.Observe(time.Since(start).Seconds())
	if m.episodeOpen.Swap(!obs.Done) {
		s.metrics.endEpisode("") // the previous episode, replaced
	}
	s.metrics.episodesStarted.Inc()
	if obs.Done {
		s.metrics.endEpisode(obs.Metadata.ErrorType)
	}
	s.webReset(m, obs)
	return obs, nil
}

// step runs a session's Step for any surface: it refuses new turns while
// draining, and records the turn's duration, its tool calls and the end of
// the episode.
func (s *Server) step(ctx context.Context, m *managed, a wire.Action, emit func(wire.Event)) (*wire.Observation, error) {
	if s.isDraining() {
		return nil, errDraining
	}
	m.ops.Add(1)
	defer s.opDone(m)
	m.touch()
	start := time.Now()
	obs, err := m.sess.Step(ctx, a, s.webTurnStarting(m, a, emit))
	m.touch()
	if err != nil {
		return nil, err
	}
	s.webStepped(m, a, obs)
	m.steps.Add(1)
	s.metrics.turnSeconds.Observe(time.Since(start).Seconds())
	s.metrics.observeTools(obs)
	s.metrics.model.observe(obs)
	if obs.Done && m.episodeOpen.CompareAndSwap(true, false) {
		s.metrics.endEpisode(obs.Metadata.ErrorType)
	}
	return obs, nil
}

// opDone ends an operation; on a session already ended it counts the end
// of an episode left open.
func (s *Server) opDone(m *managed) {
	m.ops.Add(-1)
	if m.gone.Load() && m.episodeOpen.CompareAndSwap(true, false) {
		s.metrics.endEpisode("")
	}
}

// ended records the end of a session (after its Close): an episode left
// open ended without a failure of its own, unless an operation still
// running will say otherwise.
func (s *Server) ended(m *managed) {
	if m.ops.Load() == 0 && m.episodeOpen.CompareAndSwap(true, false) {
		s.metrics.endEpisode("")
	}
	s.metrics.sessionsOpen.WithLabelValues(m.kind).Dec()
}
