package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DrainPolicy says what a drain does with turns that are running.
type DrainPolicy string

// Drain policies.
const (
	// DrainFinish lets running turns finish (within the finish timeout)
	// and answers them before the sessions end.
	DrainFinish DrainPolicy = "finish"
	// DrainCancel abandons running turns at once: each is answered with a
	// "cancelled" observation where the client is still there.
	DrainCancel DrainPolicy = "cancel"
)

// DefaultDrainFinishTimeout bounds the wait for running turns under
// DrainFinish when Options.DrainFinishTimeout is not set.
const DefaultDrainFinishTimeout = 15 * time.Second

// ParseDrainPolicy accepts "finish" or "cancel" in any case.
func ParseDrainPolicy(s string) (DrainPolicy, error) {
	switch DrainPolicy(strings.ToLower(strings.TrimSpace(s))) {
	case "", DrainFinish:
		return DrainFinish, nil
	case DrainCancel:
		return DrainCancel, nil
	}
	return "", fmt.Errorf("invalid drain policy %q: must be %q or %q", s, DrainFinish, DrainCancel)
}

// turnPoll is how often a finishing drain looks for turns that ended.
const turnPoll = 10 * time.Millisecond

// isDraining reports whether Shutdown has started.
func (s *Server) isDraining() bool { return s.draining.Load() }

// Shutdown drains the server. At once: readiness turns false, no session is
// created and no reset or turn starts (they are refused with "server is
// shutting down"); the listener stays open, so probes and /metrics answer
// throughout. Then, under DrainFinish, turns already running may finish
// within DrainFinishTimeout and are answered (idle sessions end at once);
// under DrainCancel they are abandoned. Every session then ends (its
// harness tree stopped), sockets close with "going away", and last the
// listener closes; Shutdown waits for handlers until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.metrics.Draining()
	s.reg.refuse()
	if s.stopReap != nil {
		s.stopReap()
	}
	sessions := s.reg.drain()
	var finishBy time.Time
	if s.opts.DrainPolicy == DrainFinish {
		finishBy = time.Now().Add(s.opts.DrainFinishTimeout)
	}
	var wg sync.WaitGroup
	for _, m := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			why := "server shutting down"
			if !finishBy.IsZero() && s.waitTurn(ctx, m, finishBy) {
				why = "server shutting down (its running turn finished)"
			}
			s.destroy(m, why)
		}()
	}
	wg.Wait()
	s.quitOnce.Do(func() { close(s.quit); s.endQuit() })
	var errs []error
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("websocket handlers still running: %w", ctx.Err()))
	}
	s.httpMu.Lock()
	hs := s.httpSrv
	s.shutDown = true
	s.httpMu.Unlock()
	if hs != nil {
		errs = append(errs, hs.Shutdown(ctx))
	}
	s.log.Info("drained", "sessions_ended", len(sessions), "policy", s.opts.DrainPolicy)
	return errors.Join(errs...)
}

// waitTurn waits until m runs no reset or turn, or until by or ctx ends; it
// reports whether a running operation finished.
func (s *Server) waitTurn(ctx context.Context, m *managed, by time.Time) bool {
	if !m.sess.Busy() {
		return false
	}
	t := time.NewTicker(turnPoll)
	defer t.Stop()
	for time.Now().Before(by) {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			// An operation counts as finished once its answer is sent
			// (ops drops after the handler's Step returns).
			if !m.sess.Busy() && m.ops.Load() == 0 {
				return true
			}
		}
	}
	s.log.Warn("drain: a running turn did not finish in time; cancelling it", "session_id", m.id,
		"drain_finish_timeout", s.opts.DrainFinishTimeout.String())
	return false
}
