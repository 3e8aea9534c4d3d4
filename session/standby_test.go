package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// agentsUnder lists the pids of live processes whose HARNESSD_WORKSPACE
// lies under root (the session's standby and current harnesses).
func agentsUnder(t *testing.T, root string) map[int]string {
	t.Helper()
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("HARNESSD_WORKSPACE=")); ok && strings.HasPrefix(string(v), root) {
				out[pid] = string(v)
			}
		}
	}
	return out
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type episodeFacts struct{ id, token, workspace string }

func facts(t *testing.T, s *session.Session, obs *wire.Observation) episodeFacts {
	t.Helper()
	r := responseText(t, s, "env HARNESSD_EPISODE_ID;;env HARNESSD_MCP_TOKEN;;pwd")
	lines := strings.Split(r, "\n")
	if len(lines) != 3 {
		t.Fatalf("facts: %q", r)
	}
	f := episodeFacts{strings.TrimPrefix(lines[0], "HARNESSD_EPISODE_ID="), strings.TrimPrefix(lines[1], "HARNESSD_MCP_TOKEN="), lines[2]}
	if f.id != obs.Metadata.EpisodeID {
		t.Fatalf("the harness has episode id %q, the reset said %q", f.id, obs.Metadata.EpisodeID)
	}
	return f
}

func TestWarmStandbyHandsOverFreshEpisodes(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t)
	cfg.Warm = 1
	cfg.Workspace.Root = root
	s := newSession(t, cfg)
	// The first standby is prepared as soon as the session exists.
	waitFor(t, "the first standby's harness", func() bool { return len(agentsUnder(t, root)) == 1 })
	o1 := reset(t, s)
	if !o1.Metadata.Standby {
		t.Fatalf("the first reset was not handed the ready standby: %+v", o1.Metadata)
	}
	f1 := facts(t, s, o1)
	// A workspace's path is reused once its episode's disk is emptied, so
	// the episodes' harnesses are told apart by pid and their workspaces by
	// a file each.
	pidIn := func(ws string) int {
		for pid, w := range agentsUnder(t, root) {
			if w == ws {
				return pid
			}
		}
		return 0
	}
	pid1, marker1 := pidIn(f1.workspace), filepath.Join(f1.workspace, "episode-1")
	if err := os.WriteFile(marker1, nil, 0o600); err != nil || pid1 == 0 {
		t.Fatalf("the first episode (harness pid %d): %v", pid1, err)
	}
	waitFor(t, "the next standby", func() bool { return len(agentsUnder(t, root)) == 2 })
	o2 := reset(t, s)
	if !o2.Metadata.Standby {
		t.Fatalf("the second reset was not handed a standby")
	}
	f2 := facts(t, s, o2)
	if f1.id == f2.id || f1.token == f2.token || f1.workspace == f2.workspace || f1.token == "" {
		t.Fatalf("consecutive episodes share something: %+v %+v", f1, f2)
	}
	// The handed-over reset retires the first episode in the background.
	waitFor(t, "the first episode's workspace to go", func() bool {
		_, err := os.Stat(marker1)
		_, alive := agentsUnder(t, root)[pid1]
		return err != nil && !alive
	})
	pid2 := pidIn(f2.workspace)
	marker2 := filepath.Join(f2.workspace, "episode-2")
	if err := os.WriteFile(marker2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := responseText(t, s, `tool add {"a":2,"b":3}`); got != "add -> 5" {
		t.Fatalf("a standby's bridge: %q", got)
	}
	// The standby prepared now dies while waiting: the next reset gets a
	// fresh harness instead.
	// (The first episode's harness is retired in the background: it is
	// not the standby.)
	var standbyPid int
	waitFor(t, "the third standby", func() bool {
		for pid := range agentsUnder(t, root) {
			if pid != pid1 && pid != pid2 {
				standbyPid = pid
				return true
			}
		}
		return false
	})
	syscall.Kill(standbyPid, syscall.SIGKILL)
	// Dead is reaped by the supervisor: while a killed process exits its
	// environ is already unreadable (agentsUnder no longer lists it), and
	// a zombie is still the supervisor's to collect.
	waitFor(t, "the standby's death", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", standbyPid))
		return err != nil
	})
	o3 := reset(t, s)
	if o3.Metadata.Standby {
		t.Fatalf("a dead standby was handed out")
	}
	f3 := facts(t, s, o3)
	// The replacement may take the previous episode's disk once that
	// episode has closed and the disk is emptied (the session's disks are
	// taken in turn): the same workspace path then, but nothing of it.
	_, leftover := os.Stat(filepath.Join(f3.workspace, "episode-2"))
	if f3.id == f2.id || f3.token == f2.token || leftover == nil {
		t.Fatalf("the replacement shares with the previous episode: %+v %+v (its file left: %v)", f2, f3, leftover == nil)
	}
	waitFor(t, "the replacement standby", func() bool { return len(agentsUnder(t, root)) == 2 })
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := agentsUnder(t, root); len(left) != 0 {
		t.Fatalf("harnesses left after Close: %v", left)
	}
}

func TestWarmStandbyIsNotUsedForANamedEpisode(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t)
	cfg.Warm = 1
	cfg.Workspace.Root = root
	s := newSession(t, cfg)
	waitFor(t, "the standby", func() bool { return len(agentsUnder(t, root)) == 1 })
	obs, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: "named-1"})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Metadata.Standby || obs.Metadata.EpisodeID != "named-1" {
		t.Fatalf("a named episode got %+v", obs.Metadata)
	}
	facts(t, s, obs)
	if o := reset(t, s); !o.Metadata.Standby {
		t.Fatalf("the kept standby was not handed to the next unnamed reset")
	}
}

// TestHandoverRetiresAfterTheReply: a reset whose caller holds its reply
// back (AfterReply) leaves the previous episode's harness running until
// the caller releases it — the retirement does not compete with writing
// the reply — and retires it then.
func TestHandoverRetiresAfterTheReply(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t)
	cfg.Warm = 1
	cfg.Workspace.Root = root
	s := newSession(t, cfg)
	if !reset(t, s).Metadata.Standby {
		t.Fatal("the first reset was not handed the standby")
	}
	first := facts(t, s, &wire.Observation{Metadata: wire.Metadata{EpisodeID: s.EpisodeID()}})
	pidOf := func(ws string) int {
		for pid, w := range agentsUnder(t, root) {
			if w == ws {
				return pid
			}
		}
		return 0
	}
	old := pidOf(first.workspace)
	if old == 0 {
		t.Fatal("the first episode's harness is not running")
	}
	// The workspace's path may be the next standby's once the first
	// episode's disk is emptied and reused: retired means this file gone.
	marker := filepath.Join(first.workspace, "first-episode")
	if err := os.WriteFile(marker, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, replied := session.AfterReply(context.Background())
	obs, err := s.Reset(ctx, session.ResetOptions{})
	if err != nil || !obs.Metadata.Standby {
		t.Fatalf("the second reset: %v %+v", err, obs)
	}
	// Held: nothing of the previous episode has been torn down.
	if _, err := os.Stat(marker); err != nil || pidOf(first.workspace) != old {
		t.Fatalf("the previous episode was retired before the reply was released (workspace %v)", err)
	}
	replied()
	waitFor(t, "the previous episode's retirement", func() bool {
		_, err := os.Stat(marker)
		_, alive := agentsUnder(t, root)[old]
		return err != nil && !alive
	})
}
