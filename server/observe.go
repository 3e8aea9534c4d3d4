package server

import (
	"context"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// The server runs a session's operations for every surface (reset and
// step below) and subscribes to its lifecycle (observerFor): metrics and
// the console are told of episodes, turns and their events as the session
// reports them, never called from these paths. The session reports each
// episode's end exactly once.

// observerFor is the lifecycle observer of m's session.
func (s *Server) observerFor(m *managed) session.Observer {
	return func(ev session.Event) {
		s.metrics.Observe(ev)
		s.console.Observe(m.view(), ev)
	}
}

// reset runs a session's Reset for any surface; it refuses new work while
// draining.
func (s *Server) reset(ctx context.Context, m *managed, opts session.ResetOptions) (*wire.Observation, error) {
	if s.isDraining() {
		return nil, errDraining
	}
	m.ops.Add(1)
	defer m.ops.Add(-1)
	m.touch()
	defer m.touch()
	return m.sess.Reset(ctx, opts)
}

// step runs a session's Step for any surface; it refuses new turns while
// draining.
func (s *Server) step(ctx context.Context, m *managed, a wire.Action, emit func(wire.Event)) (*wire.Observation, error) {
	if s.isDraining() {
		return nil, errDraining
	}
	m.ops.Add(1)
	defer m.ops.Add(-1)
	m.touch()
	defer m.touch()
	obs, err := m.sess.Step(ctx, a, emit)
	if err == nil {
		m.steps.Add(1)
	}
	return obs, err
}
