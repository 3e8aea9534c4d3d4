package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/session"
)

// TestBackToBackResetsAreEachHandedAStandby: with warm: 1, resets one
// right after the other (as a server makes them: background work after
// the reply, session.AfterReply) are each handed a standby: a reset that
// arrives while the next standby is still being prepared waits for it
// instead of finding the pool empty and starting a cold episode. Each
// must come within the harness's start-up budget.
func TestBackToBackResetsAreEachHandedAStandby(t *testing.T) {
	for _, iso := range []string{config.IsolationProcess, config.IsolationSandbox} {
		t.Run(iso, func(t *testing.T) {
			edit := func(c *config.Config) { c.Warm = 1 }
			var s *session.Session
			if iso == config.IsolationSandbox {
				s = sandboxed(t, edit)
			} else {
				cfg := testConfig(t)
				cfg.Isolation = iso
				edit(cfg)
				s = newSession(t, cfg)
			}
			for i := range 12 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				rctx, replied := session.AfterReply(ctx)
				obs, err := s.Reset(rctx, session.ResetOptions{})
				replied()
				cancel()
				if err != nil || obs.Done {
					t.Fatalf("reset %d: %v %+v", i, err, obs)
				}
				if !obs.Metadata.Standby {
					t.Fatalf("reset %d, back to back with the one before, was not handed a standby", i)
				}
			}
		})
	}
}
