package session_test

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/session"
)

func TestSessionNeedsARegistry(t *testing.T) {
	cfg := testConfig(t)
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if _, err := session.NewSession(session.Options{Config: cfg, Supervisor: supervisor(t)}); err == nil || !strings.Contains(err.Error(), "no adapter registry") {
		t.Fatalf("NewSession without a registry: %v", err)
	}
}
