package session

import (
	"context"
	"fmt"

	"github.com/harnessd/harnessd/wire"
)

// rewind is Reset with ResetOptions.AtTurn: the session's episode is
// replaced by one continuing from its own state after turn k, as a fork's
// sibling would (from the checkpoint after turn k with the harness's state
// of then, or by replaying turns 1..k). Within Reset's operation.
func (s *Session) rewind(ctx context.Context, k int) (*wire.Observation, error) {
	r := s.current()
	if r == nil {
		return nil, ErrNoEpisode
	}
	if k < 1 || k > r.steps {
		return nil, fmt.Errorf("reset at_turn %d: the episode has turns 1 to %d", k, r.steps)
	}
	src, err := s.forkSourceOf(ctx, r, ForkOptions{AtTurn: k})
	if err != nil {
		return nil, err
	}
	defer src.release()
	// The checkpoints go with the episode they belong to, after the
	// source has been opened from.
	s.mu.Lock()
	cps := r.checkpoints
	r.checkpoints = nil
	s.mu.Unlock()
	if cps != nil {
		defer cps.Close()
	}
	s.endPrevious(ctx, false)
	s.afterOp(s.pool.Fill)
	return s.openFrom(ctx, src)
}
