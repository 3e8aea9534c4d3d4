package session_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// TestRecordWorkspaceChanges: after each turn the record file lists the
// workspace paths the turn changed (the test agent writes a file in turn 1
// and another in turn 2), and only those of that turn.
func TestRecordWorkspaceChanges(t *testing.T) {
	cfg := testConfig(t)
	cfg.RecordDir = t.TempDir()
	cfg.Workspace.RecordChanges = true
	s := newSession(t, cfg)
	if _, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: "ws-1"}); err != nil {
		t.Fatal(err)
	}
	step(t, s, "write notes/a.txt hello")
	step(t, s, "write notes/b.txt world")
	f, err := os.Open(filepath.Join(cfg.RecordDir, "ws-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := wire.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[int][]string{}
	for _, r := range recs {
		if r.Kind == wire.RecordWorkspace {
			changed[r.Turn] = r.Workspace.Changed
			if r.Workspace.Walked == 0 || r.Workspace.Partial || r.Workspace.More != 0 {
				t.Errorf("turn %d: %+v", r.Turn, r.Workspace)
			}
		}
	}
	if c := changed[1]; !slices.Contains(c, "notes/") || !slices.Contains(c, "notes/a.txt") || slices.Contains(c, "notes/b.txt") {
		t.Errorf("turn 1 changed %q, want notes/ and notes/a.txt", c)
	}
	if c := changed[2]; !slices.Contains(c, "notes/b.txt") {
		t.Errorf("turn 2 changed %q, want notes/b.txt", c)
	}

	// Not asked for: no workspace record.
	cfg.Workspace.RecordChanges = false
	s2 := newSession(t, cfg)
	if _, err := s2.Reset(context.Background(), session.ResetOptions{EpisodeID: "ws-2"}); err != nil {
		t.Fatal(err)
	}
	step(t, s2, "write c.txt x")
	b, err := os.ReadFile(filepath.Join(cfg.RecordDir, "ws-2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"kind":"workspace"`) {
		t.Error("a workspace record without workspace.record_changes")
	}
}
