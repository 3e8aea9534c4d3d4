package session_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// forkSiblings forks s into count siblings with mechanism m at turn at,
// failing on any sibling's error, and closes them at the test's end.
func forkSiblings(t *testing.T, s *session.Session, count, at int, m string) []session.Sibling {
	t.Helper()
	sibs, err := s.Fork(context.Background(), session.ForkOptions{Count: count, AtTurn: at, Mechanism: m})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	if len(sibs) != count {
		t.Fatalf("%d siblings, want %d", len(sibs), count)
	}
	for i, sb := range sibs {
		if sb.Session != nil {
			t.Cleanup(func() { sb.Session.Close(context.Background()) })
		}
		if sb.Err != nil {
			t.Fatalf("sibling %d: %v", i, sb.Err)
		}
		if sb.Mechanism != m || sb.Observation.Metadata.Fork == nil || sb.Observation.Metadata.Fork.Mechanism != m {
			t.Fatalf("sibling %d: mechanism %q, fork %+v, want %q", i, sb.Mechanism, sb.Observation.Metadata.Fork, m)
		}
		if sb.Session.ID() == s.ID() || sb.EpisodeID == s.EpisodeID() {
			t.Fatalf("sibling %d shares the parent's ids", i)
		}
		if pid, _, k := sb.Session.ForkedFrom(); pid != s.ID() || k != at && at != 0 {
			t.Fatalf("sibling %d: forked from %q at %d", i, pid, k)
		}
	}
	return sibs
}

// forkTwoTurns runs the parent's two turns: a file written, the
// conversation's messages kept in the agent's memory.
func forkTwoTurns(t *testing.T, s *session.Session) {
	t.Helper()
	reset(t, s)
	for _, msg := range []string{"write notes.txt parent-wrote", "reply second"} {
		if o := step(t, s, msg); o.Done || o.Metadata.ErrorType != "" {
			t.Fatalf("parent %q: %+v", msg, o.Metadata)
		}
	}
}

// checkSiblings asserts that each sibling continues the parent's memory
// and files, that their writes are their own, and that the parent goes on.
func checkSiblings(t *testing.T, parent *session.Session, sibs []session.Sibling) {
	t.Helper()
	for i, sb := range sibs {
		got := responseText(t, sb.Session, fmt.Sprintf("history;;count;;cat notes.txt;;write mine.txt sibling-%d", i))
		for _, want := range []string{"write notes.txt parent-wrote | reply second | history", "turns: 3", "notes.txt: parent-wrote"} {
			if !strings.Contains(got, want) {
				t.Fatalf("sibling %d's turn 3: %q lacks %q", i, got, want)
			}
		}
	}
	for i, sb := range sibs {
		b, err := os.ReadFile(filepath.Join(session.WorkspaceOf(sb.Session), "mine.txt"))
		if want := fmt.Sprintf("sibling-%d", i); err != nil || string(b) != want {
			t.Errorf("sibling %d's mine.txt: %q %v, want %q (another sibling's write reached it)", i, b, err, want)
		}
	}
	got := responseText(t, parent, "count;;cat mine.txt")
	if !strings.Contains(got, "turns: 3") || strings.Contains(got, "sibling-") {
		t.Errorf("the parent after the fork: %q (it must count on alone and see no sibling's file)", got)
	}
}

// TestForkByLineProtocol forks a test agent ×4 by the line protocol's fork
// message: each sibling's next turn has the parent's memory and files.
func TestForkByLineProtocol(t *testing.T) {
	s := newSession(t, testConfig(t))
	forkTwoTurns(t, s)
	if _, err := s.Fork(context.Background(), session.ForkOptions{Count: 1, Mechanism: session.ForkResume}); !errors.Is(err, session.ErrForkUnavailable) {
		t.Fatalf("a resume fork of a line-protocol agent: %v", err)
	}
	checkSiblings(t, s, forkSiblings(t, s, 4, 0, session.ForkLine))
}

// TestForkByReplay forks ×4 by replay (the agent's own fork message
// refused): a fresh agent is driven through the parent's two turns.
func TestForkByReplay(t *testing.T) {
	s := newSession(t, testConfig(t, "--no-fork"))
	forkTwoTurns(t, s)
	if _, err := s.Fork(context.Background(), session.ForkOptions{Count: 1, Mechanism: session.ForkLine}); !errors.Is(err, session.ErrForkUnavailable) {
		t.Fatalf("a line fork of an agent that refuses fork: %v", err)
	}
	checkSiblings(t, s, forkSiblings(t, s, 4, 0, session.ForkReplay))
}

// TestForkByReplayPastItsTurns: the turn messages a replay needs are kept
// for at most maxReplayTurns turns (a long episode's memory does not grow
// with them); past that a replay fork is refused, saying why, and a line
// fork still works. The control: within the bound, replay works.
func TestForkByReplayPastItsTurns(t *testing.T) {
	session.SetMaxReplayTurns(t, 3)
	s := newSession(t, testConfig(t))
	reset(t, s)
	for range 3 {
		ok(t, step(t, s, "count"))
	}
	forkSiblings(t, s, 1, 0, session.ForkReplay)
	ok(t, step(t, s, "count"))
	_, err := s.Fork(context.Background(), session.ForkOptions{Count: 1, Mechanism: session.ForkReplay})
	if !errors.Is(err, session.ErrForkUnavailable) || !strings.Contains(err.Error(), "3 turns") {
		t.Fatalf("a replay fork past the kept turns: %v", err)
	}
	forkSiblings(t, s, 1, 0, session.ForkLine)
}

// TestForkAutoPicksLine: without a mechanism the agent's fork message is
// used where it answers, replay where it does not.
func TestForkAutoPicks(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{{nil, session.ForkLine}, {[]string{"--no-fork"}, session.ForkReplay}} {
		s := newSession(t, testConfig(t, c.args...))
		forkTwoTurns(t, s)
		sibs, err := s.Fork(context.Background(), session.ForkOptions{Count: 1})
		if err != nil || sibs[0].Err != nil {
			t.Fatalf("%v: %v %+v", c.args, err, sibs)
		}
		sibs[0].Session.Close(context.Background())
		if sibs[0].Mechanism != c.want {
			t.Errorf("%v: mechanism %q, want %q", c.args, sibs[0].Mechanism, c.want)
		}
	}
}

// TestForkAutoSaysWhyItReplays: an automatic fork that falls back to
// replay logs why (replay_because: what kept the harness's state from
// being handed over), where a newcomer's fork took 5.5 s (a harness
// ignoring fork, waited out for its fork_timeout) and its log said only
// "mechanism":"replay". The control: a fork by the line protocol logs no
// reason.
func TestForkAutoSaysWhyItReplays(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  bool
	}{{nil, false}, {[]string{"--no-fork"}, true}} {
		var logs testbin.Buffer
		cfg := testConfig(t, c.args...)
		cfg.Harness.Options = map[string]any{"fork_timeout": "300ms"} // what the agent that ignores fork waits out
		if err := cfg.Normalize(); err != nil {
			t.Fatal(err)
		}
		s, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t),
			Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		forkTwoTurns(t, s)
		sibs, err := s.Fork(context.Background(), session.ForkOptions{Count: 1})
		if err != nil || sibs[0].Err != nil {
			t.Fatalf("%v: %v %+v", c.args, err, sibs)
		}
		sibs[0].Session.Close(context.Background())
		var forked string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"msg":"episode forked"`) && !strings.Contains(line, `"parent_episode_id"`) {
				forked = line
			}
		}
		if got := strings.Contains(forked, `"replay_because":"`); forked == "" || got != c.why {
			t.Errorf("%v: the fork's log line %q: replay_because %v, want %v", c.args, forked, got, c.why)
		}
	}
}

// TestForkRefusals: bad options and a running turn are refused, and the
// parent stays usable.
func TestForkRefusals(t *testing.T) {
	s := newSession(t, testConfig(t))
	ctx := context.Background()
	if _, err := s.Fork(ctx, session.ForkOptions{Count: 1}); !errors.Is(err, session.ErrNoEpisode) {
		t.Errorf("fork before reset: %v", err)
	}
	forkTwoTurns(t, s)
	for _, o := range []session.ForkOptions{{Count: 0}, {Count: 65}, {Count: 1, AtTurn: 3}, {Count: 1, AtTurn: -1}, {Count: 1, Mechanism: "criu?"}} {
		if _, err := s.Fork(ctx, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	done := make(chan error, 1)
	live := make(chan struct{})
	var once sync.Once
	go func() {
		_, err := s.Step(ctx, wire.Action{Message: "reply waiting;;waitfor go"}, func(wire.Event) { once.Do(func() { close(live) }) })
		done <- err
	}()
	<-live // the turn is running: its first event is out
	if _, err := s.Fork(ctx, session.ForkOptions{Count: 1}); !errors.Is(err, session.ErrForkBusy) {
		t.Errorf("fork during a turn: %v", err)
	}
	if err := os.WriteFile(filepath.Join(session.WorkspaceOf(s), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := responseText(t, s, "count"); !strings.Contains(got, "turns: 4") {
		t.Errorf("the parent after the refusals: %q", got)
	}
}

// TestForkAtEarlierTurnFromCheckpoints: with a checkpoint per turn, a fork
// at turn 1 of 3 starts from the workspace after turn 1.
func TestForkAtEarlierTurnFromCheckpoints(t *testing.T) {
	cfg := testConfig(t)
	cfg.Episode.Checkpoints = config.CheckpointsEveryTurn
	s := newSession(t, cfg)
	reset(t, s)
	for _, msg := range []string{"write a.txt one", "write a.txt two;;write b.txt two", "write a.txt three"} {
		step(t, s, msg)
	}
	for _, m := range []string{session.ForkLine, session.ForkReplay} {
		sibs := forkSiblings(t, s, 2, 1, m)
		for i, sb := range sibs {
			got := responseText(t, sb.Session, "count;;cat a.txt;;history")
			if !strings.Contains(got, "turns: 2") || !strings.Contains(got, "a.txt: one") || strings.Contains(got, "write a.txt two") {
				t.Errorf("%s sibling %d at turn 1: %q", m, i, got)
			}
			if _, err := os.Stat(filepath.Join(session.WorkspaceOf(sb.Session), "b.txt")); !os.IsNotExist(err) {
				t.Errorf("%s sibling %d has turn 2's b.txt: %v", m, i, err)
			}
		}
	}
}

// TestForkReplayAnswersFromTheRecord: a replay sibling's model calls are
// answered from the parent's record (the engine sees none of them); its
// next call extends the parent's chain, and its export holds the parent's
// calls as its prefix.
func TestForkReplayAnswersFromTheRecord(t *testing.T) {
	llm, url := engine(t)
	cfg := engineConfig(t, url)
	s := newSession(t, cfg)
	reset(t, s)
	step(t, s, "llm first question;;write notes.txt parent-wrote")
	step(t, s, "llm second question")
	before := len(llm.Requests())
	sibs := forkSiblings(t, s, 4, 0, session.ForkReplay)
	if got := len(llm.Requests()); got != before {
		t.Fatalf("the replay reached the engine: %d requests, %d before the fork", got, before)
	}
	for i, sb := range sibs {
		if f := sb.Observation.Metadata.Fork; f.ReplayedCalls != 2 {
			t.Errorf("sibling %d: %d calls replayed, want 2", i, f.ReplayedCalls)
		}
		o := step(t, sb.Session, fmt.Sprintf("llm sibling %d asks", i))
		rs := gatewayResponses(o.Metadata.TurnEvents)
		if len(rs) != 1 || rs[0].CallIndex != 3 || rs[0].ParentCallIndex != 2 {
			t.Fatalf("sibling %d's turn 3: %d responses, first %+v", i, len(rs), *rs[0])
		}
		ex, err := sb.Session.Export(sb.EpisodeID)
		if err != nil {
			t.Fatal(err)
		}
		parent, err := s.Export(s.EpisodeID())
		if err != nil {
			t.Fatal(err)
		}
		checkExport(t, ex, 3)
		pc, sc := parent.Chains[0], ex.Chains[0]
		if p := rs[0].PromptTokenIDs; rs[0].PromptTokenIDsFrom != 0 || len(p) <= len(pc.InputIDs) || !slices.Equal(p[:len(pc.InputIDs)], pc.InputIDs) {
			t.Errorf("sibling %d's first call: its prompt (%d ids from %d) does not extend the parent's last prompt+completion (%d ids)", i, len(p), rs[0].PromptTokenIDsFrom, len(pc.InputIDs))
		}
		if len(sc.InputIDs) <= len(pc.InputIDs) || !slices.Equal(sc.InputIDs[:len(pc.InputIDs)], pc.InputIDs) {
			t.Errorf("sibling %d's chain (%d ids) does not start with the parent's (%d ids)", i, len(sc.InputIDs), len(pc.InputIDs))
		}
	}
	if got := len(llm.Requests()); got != before+4 {
		t.Errorf("the siblings' own calls: %d engine requests, want %d", got-before, 4)
	}
}

// TestForkReplayDivergence: a replayed turn whose model request differs
// from the recorded one (the agent sends its own episode id) fails that
// sibling, naming the divergence; the same turn with a request that does
// not differ replays (the positive control).
func TestForkReplayDivergence(t *testing.T) {
	llm, url := engine(t)
	cfg := engineConfig(t, url)
	cfg.Harness.Env = map[string]string{"FORK_SAME": "the same in every episode"}
	s := newSession(t, cfg)
	reset(t, s)
	step(t, s, "llmenv FORK_SAME")
	sibs := forkSiblings(t, s, 1, 0, session.ForkReplay)
	if n := len(llm.Requests()); n != 1 {
		t.Fatalf("the control's replay reached the engine: %d requests", n)
	}
	_ = sibs
	step(t, s, "llmenv HARNESSD_EPISODE_ID")
	got, err := s.Fork(context.Background(), session.ForkOptions{Count: 2, Mechanism: session.ForkReplay})
	if err != nil {
		t.Fatal(err)
	}
	for i, sb := range got {
		if sb.Session != nil {
			t.Cleanup(func() { sb.Session.Close(context.Background()) })
		}
		if sb.Err == nil || !strings.Contains(sb.Err.Error(), "diverged") {
			t.Errorf("sibling %d of a diverging replay: %v", i, sb.Err)
		}
	}
	if n := len(llm.Requests()); n != 2 {
		t.Errorf("a diverging replay reached the engine: %d requests, want the parent's 2", n)
	}
	if got := responseText(t, s, "count"); !strings.Contains(got, "turns: 3") {
		t.Errorf("the parent after a failed fork: %q", got)
	}
}

// TestResetAtTurn: a reset to turn 1 of 3 continues from the episode's own
// state after turn 1 (its checkpoint and the agent's memory of then).
func TestResetAtTurn(t *testing.T) {
	cfg := testConfig(t)
	cfg.Episode.Checkpoints = config.CheckpointsEveryTurn
	s := newSession(t, cfg)
	reset(t, s)
	for _, msg := range []string{"write a.txt one", "write a.txt two", "write a.txt three"} {
		step(t, s, msg)
	}
	old := s.EpisodeID()
	one := 1
	obs, err := s.Reset(context.Background(), session.ResetOptions{AtTurn: &one})
	if err != nil || obs.Done {
		t.Fatalf("reset at turn 1: %v %+v", err, obs)
	}
	if f := obs.Metadata.Fork; f == nil || f.ParentEpisodeID != old || f.AtTurn != 1 || s.EpisodeID() == old {
		t.Fatalf("reset at turn 1: fork %+v, episode %s (was %s)", obs.Metadata.Fork, s.EpisodeID(), old)
	}
	if got := responseText(t, s, "count;;cat a.txt"); !strings.Contains(got, "turns: 2") || !strings.Contains(got, "a.txt: one") {
		t.Errorf("after the reset to turn 1: %q", got)
	}
	four := 4
	if _, err := s.Reset(context.Background(), session.ResetOptions{AtTurn: &four}); err == nil {
		t.Error("a reset past the last turn: no error")
	}
}

// TestForkSandboxed: the same fork in sandbox isolation (the directories
// on their disk quota, copied by a snapshot of its image), by the line
// protocol and by replay.
func TestForkSandboxed(t *testing.T) {
	for _, m := range []string{session.ForkLine, session.ForkReplay} {
		t.Run(m, func(t *testing.T) {
			s := sandboxed(t, nil)
			forkTwoTurns(t, s)
			checkSiblings(t, s, forkSiblings(t, s, 4, 0, m))
		})
	}
}

// TestForkOfAFork: a sibling made by the line protocol forks again by
// replay: it carries the parent's turns' messages and tool record, so the
// grandchild replays all four turns (the parent's two, the sibling's own)
// and answers the tool call from the record.
func TestForkOfAFork(t *testing.T) {
	s := newSession(t, testConfig(t))
	reset(t, s)
	step(t, s, "write notes.txt parent-wrote")
	step(t, s, `tool add {"a":2,"b":3}`)
	child := forkSiblings(t, s, 1, 0, session.ForkLine)[0].Session
	step(t, child, "write child.txt child-wrote")
	grand := forkSiblings(t, child, 2, 0, session.ForkReplay)
	for i, g := range grand {
		if f := g.Observation.Metadata.Fork; f.ReplayedToolCalls != 1 || f.AtTurn != 3 {
			t.Errorf("grandchild %d: fork %+v (want 1 tool call replayed, at turn 3)", i, f)
		}
		got := responseText(t, g.Session, "count;;cat notes.txt;;cat child.txt")
		if !strings.Contains(got, "turns: 4") || !strings.Contains(got, "notes.txt: parent-wrote") || !strings.Contains(got, "child.txt: child-wrote") {
			t.Errorf("grandchild %d: %q", i, got)
		}
	}
}

// TestForkEarlierTurnWithoutCheckpoints: a line fork at an earlier turn
// without checkpoints is refused with the reason; the best-available
// mechanism replays instead.
func TestForkEarlierTurnWithoutCheckpoints(t *testing.T) {
	s := newSession(t, testConfig(t))
	forkTwoTurns(t, s)
	_, err := s.Fork(context.Background(), session.ForkOptions{Count: 1, AtTurn: 1, Mechanism: session.ForkLine})
	if !errors.Is(err, session.ErrForkUnavailable) || !strings.Contains(err.Error(), "checkpoints") {
		t.Fatalf("a line fork at turn 1 without checkpoints: %v", err)
	}
	sib := forkSiblings(t, s, 1, 1, session.ForkReplay)[0]
	if got := responseText(t, sib.Session, "count;;history"); !strings.Contains(got, "turns: 2") || strings.Contains(got, "reply second") {
		t.Errorf("the replayed sibling at turn 1: %q", got)
	}
}
