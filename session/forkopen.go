package session

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/session/eventlog"
	"github.com/harnessd/harnessd/wire"
)

// openSibling makes one sibling session of a fork from src.
func (s *Session) openSibling(ctx context.Context, src *forkSource, opts ForkOptions) Sibling {
	o := s.opts
	o.ID = uuid.NewString()
	o.Observer = nil
	if opts.Observer != nil {
		o.Observer = opts.Observer(o.ID)
	}
	sib := Sibling{SessionID: o.ID, Mechanism: src.mechanism}
	child, err := newSession(o, forkOrigin{sessionID: src.parentSession, episodeID: src.parentEpisode, atTurn: src.at})
	if err != nil {
		sib.Err = err
		return sib
	}
	obs, err := child.openForked(ctx, src)
	if err != nil {
		child.Close(context.WithoutCancel(ctx))
		sib.Err = err
		return sib
	}
	sib.Session, sib.Observation, sib.EpisodeID = child, obs, obs.Metadata.EpisodeID
	if obs.Metadata.ErrorType != "" {
		sib.Err = errors.New(obs.Metadata.Error)
	}
	return sib
}

// openForked opens the session's first episode from src: the directories
// from the snapshot (or fresh, for replay), the gateway holding the
// parent's calls, the harness resumed, restored or replayed.
func (s *Session) openForked(ctx context.Context, src *forkSource) (*wire.Observation, error) {
	ctx, _, end, err := s.beginOp(ctx, false)
	if err != nil {
		return nil, err
	}
	defer end()
	return s.openFrom(ctx, src)
}

// openFrom is openForked within the caller's operation.
func (s *Session) openFrom(ctx context.Context, src *forkSource) (*wire.Observation, error) {
	var err error
	if err := s.env.LockDir(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	id := uuid.NewString()
	var rec *eventlog.Recorder
	if s.cfg.RecordDir != "" {
		if rec, err = eventlog.OpenRecorder(s.cfg.RecordDir, id); err != nil {
			return nil, err
		}
	}
	s.events.Reset(rec)
	replay := src.mechanism == ForkReplay
	div := newDivergences()
	spec := episode.Spec{ID: id, Task: src.task, OnEvent: s.events.Add, Held: replay, From: src.snapshot,
		ModelHistory: src.history, ModelReplay: replay, OnDivergence: div.add}
	if replay {
		spec.ToolReplay = src.tools
	} else {
		spec.ToolInherit = src.tools
	}
	spec.Env = s.env
	ep, err := episode.Open(ctx, spec, episode.LevelDoors)
	if err != nil {
		s.events.CloseRecord()
		return nil, err
	}
	ep.SetModelSampling(src.sampling)
	ep.SetModelFullTokenIDs(src.fullIDs)
	r := &run{ep: ep, id: id, user: newUserState(s.cfg), sampling: src.sampling, fullIDs: src.fullIDs}
	s.events.Note(s.resetRecord(r))
	s.mu.Lock()
	s.cur = r
	s.last = nil
	s.mu.Unlock()
	a, err := s.newAdapter()
	if err != nil {
		ep.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	l := ep.Launch()
	l.Fork = src.state
	if err := ep.StartHarness(ctx, a, l); err != nil {
		return s.startupFailed(ctx, r, err, t0), nil
	}
	origin := &wire.ForkOrigin{ParentSessionID: src.parentSession, ParentEpisodeID: src.parentEpisode,
		AtTurn: src.at, Mechanism: src.mechanism}
	if replay {
		if f := s.replayTurns(ctx, r, src, div); f != nil {
			return s.startupFailed(ctx, r, f, t0), nil
		}
		origin.ReplayedCalls, origin.ReplayedToolCalls = src.history.Len(), len(src.tools)
		ep.Bind(s.events.Add)
	}
	s.mu.Lock()
	r.steps = src.at
	r.messages = append([]string(nil), src.messages...)
	r.messagesLost = len(r.messages) < src.at // a replay fork of it is refused, saying so
	r.toolMarks = append([]int(nil), src.toolMarks...)
	s.mu.Unlock()
	s.startClocks(r)
	ep.Log().Info("episode forked", "parent_episode_id", src.parentEpisode, "at_turn", src.at,
		"mechanism", src.mechanism, "elapsed", time.Since(t0))
	obs := &wire.Observation{Metadata: wire.Metadata{EpisodeID: id, InjectedTools: ep.Tools(),
		Isolation: s.env.Isolation, TurnNumber: src.at, Fork: origin}}
	s.noteObservation(obs)
	s.notify(EpisodeOpened{SessionID: s.id, EpisodeID: id, Elapsed: time.Since(t0), Observation: obs})
	return obs, nil
}

// replayTurns drives the fresh harness through the parent's turns while
// the doors answer from the parent's records; its events go nowhere (the
// parent's trajectory has them). A divergence, or a turn the harness did
// not complete, fails the sibling.
func (s *Session) replayTurns(ctx context.Context, r *run, src *forkSource, div *divergences) *harness.Failure {
	a := r.adapter()
	for i, msg := range src.messages {
		n := i + 1
		mctx, endModelTurn := r.ep.BeginModelTurn(ctx, n)
		tctx, cancel := context.WithTimeout(mctx, s.cfg.Episode.TurnTimeout.D())
		_, err := a.Turn(tctx, harness.TurnInput{Number: n, Message: msg}, func(wire.Event) {})
		cancel()
		endModelTurn()
		if d := div.first(); d != nil {
			return harness.Wrap(wire.FailureStartupFailed, d, "replay diverged at turn %d", n)
		}
		if err != nil {
			return harness.Wrap(wire.FailureStartupFailed, err, "replay: turn %d of %d did not complete", n, len(src.messages))
		}
	}
	if err := r.ep.EndReplay(); err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "replay diverged after turn %d", len(src.messages))
	}
	return nil
}
