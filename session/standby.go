package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// standbyTimeout bounds the background preparation of one standby (the
// harness's start-up timeout applies within it).
const standbyTimeout = 5 * time.Minute

// standby is a next episode prepared in full while the current one runs
// (warm: N): fresh directories, its sandbox, its per-episode tool sources,
// a bridge with a fresh token, its model gateway and egress proxy, and its
// harness started and ready, on an adapter of its own. Reset hands it
// over; until then it is nobody's episode: what its bridge, gateway or
// proxy see is dropped (its harness has had no turn).
type standby struct {
	ep      *episode
	adapter harness.Adapter
	err     error         // preparation failed; nothing is left of it
	done    chan struct{} // closed once preparation has finished
	cancel  context.CancelFunc
}

// emit records e in the session's event log, unless ep is a standby not
// handed over yet.
func (s *Session) emit(ep *episode, e wire.Event) {
	if ep.held.Load() {
		return
	}
	s.events.add(e)
}

// fillStandbysAfter fills the standbys in the background after d.
func (s *Session) fillStandbysAfter(d time.Duration) {
	if s.warm <= 0 {
		return
	}
	time.AfterFunc(d, s.fillStandbys)
}

// fillStandbys starts preparing standbys until warm are ready or on the
// way.
func (s *Session) fillStandbys() {
	if s.warm <= 0 || s.adapters == nil || s.cfg.Taskset() != nil {
		return
	}
	if err := s.lockDir(); err != nil {
		s.log.Warn("no standby episodes: the session directory is not usable", "err", err)
		return
	}
	for {
		s.mu.Lock()
		if s.closed || len(s.standbys) >= s.warm {
			s.mu.Unlock()
			return
		}
		s.epSeq++
		seq := s.epSeq
		ctx, cancel := context.WithTimeout(context.Background(), standbyTimeout)
		sb := &standby{done: make(chan struct{}), cancel: cancel}
		s.standbys = append(s.standbys, sb)
		s.mu.Unlock()
		go func() {
			defer close(sb.done)
			defer cancel()
			sb.err = s.prepareStandby(ctx, sb, seq)
		}()
	}
}

// prepareStandby builds sb's episode and starts its harness.
func (s *Session) prepareStandby(ctx context.Context, sb *standby, seq int) error {
	a, err := s.adapters.New(&s.cfg.Harness.Config)
	if err != nil {
		return err
	}
	id := uuid.NewString()
	ep := &episode{id: id, log: s.log.With("episode_id", id)}
	ep.held.Store(true)
	if ep.dirs, err = makeEpisodeDirs(s.dir, seq, s.cfg.Workspace.Template); err != nil {
		return err
	}
	inj, err := s.openEpisode(ctx, ep)
	if err != nil {
		s.discard(ctx, ep)
		return err
	}
	launch := s.launch(ep, inj)
	s.modelLaunch(ep, launch)
	if err := s.giveToHarness(ep); err != nil {
		s.discard(ctx, ep)
		return err
	}
	if err := a.Start(ctx, launch); err != nil {
		tctx, cancel := teardown(ctx)
		a.Stop(tctx)
		cancel()
		s.discard(ctx, ep)
		return fmt.Errorf("standby harness did not start: %w", err)
	}
	sb.ep, sb.adapter = ep, a
	return nil
}

// takeStandby returns the first standby, waiting for its preparation, or
// nil when there is none to hand over: warm is 0, the reset names its own
// episode id (a standby's harness already has its id), or the standby
// failed or its harness died while waiting (it is then dropped and
// replaced).
func (s *Session) takeStandby(ctx context.Context, opts ResetOptions) *standby {
	if opts.EpisodeID != "" {
		return nil
	}
	s.mu.Lock()
	if len(s.standbys) == 0 {
		s.mu.Unlock()
		return nil
	}
	sb := s.standbys[0]
	s.standbys = s.standbys[1:]
	s.mu.Unlock()
	select {
	case <-sb.done:
	case <-ctx.Done():
		s.dropStandby(sb)
		return nil
	}
	switch {
	case sb.err != nil:
		s.log.Warn("a standby episode could not be prepared; starting this one now", "err", sb.err)
		return nil
	case !sb.adapter.Alive():
		exit, tail, _ := sb.adapter.Diagnostics()
		s.log.Warn("a standby's harness died while waiting; starting a fresh one", "exit", exitText(exit), "stderr_tail", tail)
		s.dropStandby(sb)
		return nil
	}
	return sb
}

// dropStandby stops a standby's preparation and ends what it made.
func (s *Session) dropStandby(sb *standby) {
	sb.cancel()
	<-sb.done
	if sb.err != nil || sb.ep == nil {
		return
	}
	ctx, cancel := teardown(context.Background())
	defer cancel()
	sb.adapter.Stop(ctx)
	s.discard(ctx, sb.ep)
}

// closeStandbys ends every standby (Close).
func (s *Session) closeStandbys() {
	s.mu.Lock()
	all := s.standbys
	s.standbys = nil
	s.mu.Unlock()
	for _, sb := range all {
		s.dropStandby(sb)
	}
}

// handOver makes sb's episode the session's: its adapter becomes the
// session's, its events are recorded from now on.
func (s *Session) handOver(sb *standby) (*episode, error) {
	ep := sb.ep
	var rec *recorder
	if s.cfg.RecordDir != "" {
		var err error
		if rec, err = openRecorder(s.cfg.RecordDir, ep.id); err != nil {
			return nil, errors.Join(err, s.discardStandbyEpisode(sb))
		}
	}
	s.events.reset(rec)
	s.events.note(s.resetRecord(ep))
	s.mu.Lock()
	s.adapter = sb.adapter
	s.ep = ep
	s.last = nil
	s.mu.Unlock()
	ep.held.Store(false)
	return ep, nil
}

func (s *Session) discardStandbyEpisode(sb *standby) error {
	ctx, cancel := teardown(context.Background())
	defer cancel()
	err := sb.adapter.Stop(ctx)
	s.discard(ctx, sb.ep)
	return err
}

// exitText is an exit status for a log line.
func exitText(e *process.ExitStatus) string {
	if e == nil {
		return "unknown"
	}
	return e.String()
}
