package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox/internal/control"
)

// recycleReply is the init's answer to a recycle: a ready message with
// the new doors, or an error message.
type recycleReply struct {
	m     message
	files []*os.File
}

// Recycle puts the sandbox back to new for a later tenant (the next
// episode of a session): the last run must have ended. The init kills
// and reaps whatever is left of the namespace and checks no process but
// itself remains; ends every socket of the sandbox's network namespace
// (TIME_WAIT ones too) after the daemon closed the doors; removes every
// System V and POSIX IPC object; removes what the tenant left in the
// sandbox's own /tmp and /dev/shm and checks both are back to their
// usage at setup; resets the pid counter, so the next process gets the
// pid a first one would; and opens the doors again, on new ports (Door
// returns the new listeners). The files below the binds (workspace, HOME)
// are the caller's to empty. Any check that fails makes Recycle fail
// (*SetupError, StageRecycle) and the sandbox must then be closed, not
// handed on. Run and Recycle are serialised. A sandbox with the single id
// map (IDSelf) is never recycled: its harness is uid 0 inside, the owner
// of the namespaces' /proc/sys files (the host name, the network's and
// IPC's limits) and of its /tmp and /dev/shm, which a recycle cannot put
// back.
func (s *Sandbox) Recycle(ctx context.Context) error {
	if s.ids.mode != IDRange {
		return &SetupError{Stage: StageRecycle, Err: errors.New("a sandbox with the single id map is not handed on: its harness, uid 0 inside, owns the namespaces' sysctls and its scratch directories")}
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if r := s.cur.Load(); r != nil {
		if _, ended := r.Exit(); !ended {
			return errors.New("recycle sandbox: a run has not ended")
		}
	}
	select {
	case <-s.done:
		return fmt.Errorf("recycle sandbox: %w", process.ErrNotRunning)
	default:
	}
	s.closeDoors() // the last tenant's connections with them
	reply := make(chan recycleReply, 1)
	s.recycling.Store(&reply)
	defer s.recycling.Store(nil)
	if err := s.send(message{Type: msgRecycle}); err != nil {
		return fmt.Errorf("recycle sandbox: %w", err)
	}
	var rr recycleReply
	select {
	case rr = <-reply:
	case <-s.done:
		return fmt.Errorf("recycle sandbox: %w", process.ErrNotRunning)
	case <-ctx.Done():
		s.init.Kill() // the init's state is unknown now
		return fmt.Errorf("recycle sandbox: %w", ctx.Err())
	}
	if rr.m.Type == msgError {
		control.CloseAll(rr.files)
		return &SetupError{Stage: StageRecycle, Err: errors.New(rr.m.Error)}
	}
	if err := s.installDoors(rr.m, rr.files); err != nil {
		s.init.Kill()
		return fmt.Errorf("recycle sandbox: %w", err)
	}
	s.cur.Store(nil)
	return nil
}
