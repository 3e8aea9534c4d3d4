package session

import (
	"context"
	"os"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/process/sandbox"
)

// spareTimeout bounds the background start of a spare sandbox.
const spareTimeout = 30 * time.Second

// spare is the next episode's directories and sandbox, prepared in the
// background after a reset (sandbox isolation only) so that the next reset
// does not wait for the namespaces, the new root and the init. Nothing of
// it is the next episode's yet: no token, no tools, no harness; the
// workspace is fresh (the template copied) and unseen.
type spare struct {
	seq    int
	dirs   episodeDirs
	sb     *sandbox.Sandbox
	err    error
	done   chan struct{} // closed once preparation has finished
	cancel context.CancelFunc
}

// prepareSpare starts preparing the next episode's sandbox unless the
// session is closed, not sandboxed, or already has a spare.
func (s *Session) prepareSpare() {
	// With a taskset the next task (its WORKDIR, its limits) is not known.
	if s.iso != config.IsolationSandbox || s.cfg.Taskset() != nil {
		return
	}
	s.mu.Lock()
	if s.closed || s.next != nil {
		s.mu.Unlock()
		return
	}
	s.epSeq++
	ctx, cancel := context.WithTimeout(context.Background(), spareTimeout)
	sp := &spare{seq: s.epSeq, done: make(chan struct{}), cancel: cancel}
	s.next = sp
	s.mu.Unlock()
	go func() {
		defer close(sp.done)
		defer cancel()
		if sp.dirs, sp.err = makeEpisodeDirs(s.dir, sp.seq, s.cfg.Workspace.Template); sp.err != nil {
			return
		}
		if sp.sb, sp.err = s.startSandbox(ctx, sp.dirs, nil); sp.err != nil {
			os.RemoveAll(sp.dirs.root)
		}
	}()
}

// takeSpare hands the prepared next episode's directories and sandbox to
// ep, waiting for its preparation to finish; false when there is none or
// it failed (the reset then makes its own).
func (s *Session) takeSpare(ctx context.Context, ep *episode) bool {
	s.mu.Lock()
	sp := s.next
	s.next = nil
	s.mu.Unlock()
	if sp == nil {
		return false
	}
	select {
	case <-sp.done:
	case <-ctx.Done():
		dropSpare(sp)
		return false
	}
	if sp.err != nil {
		s.log.Warn("the spare sandbox could not be prepared; starting one now", "err", sp.err)
		return false
	}
	select {
	case <-sp.sb.Done():
		s.log.Warn("the spare sandbox ended while waiting; starting one now")
		dropSpare(sp)
		return false
	default:
	}
	ep.dirs, ep.sandbox = sp.dirs, sp.sb
	return true
}

// closeSpare ends a spare (Close).
func (s *Session) closeSpare() {
	s.mu.Lock()
	sp := s.next
	s.next = nil
	s.mu.Unlock()
	if sp != nil {
		dropSpare(sp)
	}
}

// dropSpare stops a spare's preparation and removes what it made.
func dropSpare(sp *spare) {
	sp.cancel()
	<-sp.done
	if sp.err != nil {
		return
	}
	sp.sb.Close()
	os.RemoveAll(sp.dirs.root)
}
