package server

import (
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
)

// TestALiveEpisodeIDIsNotTakenTwice (red team 11): with record_dir, a
// second session's reset naming the id of another session's live episode
// is the client's error (an error frame, the session usable), not a second
// writer of the first's record file; once the first session is gone the id
// is reused (the control). session/eventlog's
// TestASecondLiveEpisodeOfAnIDDoesNotTouchTheFirstsRecord shows what the
// second writer did to the first's record.
func TestALiveEpisodeIDIsNotTakenTwice(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	ts := start(t, Options{MaxSessions: 3, Config: &config.Config{
		Name:      "ids",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		RecordDir: t.TempDir(),
	}})
	a, b := ts.ws(t, "/ws", nil), ts.ws(t, "/ws", nil)
	if r := roundTrip(t, a, `{"type":"reset","data":{"episode_id":"twin"}}`); r["type"] != "observation" {
		t.Fatalf("first reset: %v", r)
	}
	r := roundTrip(t, b, `{"type":"reset","data":{"episode_id":"twin"}}`)
	if r["type"] != "error" || data(r)["code"] != codeExecution || !strings.Contains(data(r)["message"].(string), "episode id in use") {
		t.Fatalf("a second live episode of the id: %v, want an error frame saying the id is in use", r)
	}
	if r := roundTrip(t, b, `{"type":"reset","data":{"episode_id":"other"}}`); r["type"] != "observation" {
		t.Fatalf("the refused session's next reset: %v", r)
	}
	a.CloseNow()
	c := ts.ws(t, "/ws", nil)
	var got map[string]any
	waitFor(t, "the id's reuse after its episode ended", func() bool {
		got = roundTrip(t, c, `{"type":"reset","data":{"episode_id":"twin"}}`)
		return got["type"] == "observation"
	})
}
