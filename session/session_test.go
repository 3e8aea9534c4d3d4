package session_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	sandbox.Init() // this binary is the init of the sandboxes it starts
	code := testbin.LeakCheck(m.Run(), sandbox.StopSpawners)
	if sup != nil {
		sup.Close(context.Background(), 0) // removes its cgroup directory
	}
	testbin.Cleanup()
	os.Exit(code)
}

var (
	supOnce sync.Once
	sup     *process.Supervisor
)

func supervisor(t *testing.T) *process.Supervisor {
	supOnce.Do(func() {
		var err error
		if sup, err = process.NewSupervisor(process.Options{}); err != nil {
			panic(err)
		}
	})
	return sup
}

// config returns a configuration running the test agent with the test tool
// server; edit hooks adjust it.
func testConfig(t *testing.T, agentArgs ...string) *config.Config {
	bin := testbin.Path(t, "testharness")
	cfg := &config.Config{
		Name:      "test",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: append([]string{bin, "agent"}, agentArgs...), BuiltinTools: []string{"read_file"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Tools:     []config.ToolConfig{{Name: "calc", Command: []string{bin, "tools"}}},
		Hide:      []string{"grade"},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
	}
	return cfg
}

// adapters is the registry the sessions of these tests use: the jsonl
// adapter only.
func adapters(t *testing.T) *harness.Registry {
	t.Helper()
	r := &harness.Registry{}
	if err := r.Add(jsonl.Name, jsonl.Factory); err != nil {
		t.Fatal(err)
	}
	return r
}

func newSession(t *testing.T, cfg *config.Config) *session.Session {
	t.Helper()
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func reset(t *testing.T, s *session.Session) *wire.Observation {
	t.Helper()
	obs, err := s.Reset(context.Background(), session.ResetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Done {
		t.Fatalf("reset failed: %+v", obs.Metadata)
	}
	return obs
}

func step(t *testing.T, s *session.Session, msg string) *wire.Observation {
	t.Helper()
	obs, err := s.Step(context.Background(), wire.Action{Message: msg}, nil)
	if err != nil {
		t.Fatalf("step %q: %v", msg, err)
	}
	return obs
}

func pidIn(t *testing.T, text, word string) int {
	t.Helper()
	i := strings.Index(text, word+" ")
	if i < 0 {
		t.Fatalf("no %q in %q", word, text)
	}
	f := strings.Fields(text[i+len(word)+1:])
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestMultiTurnKeepsContext(t *testing.T) {
	s := newSession(t, testConfig(t))
	r := reset(t, s)
	// grade is hidden; read_file clashes with a harness built-in.
	if got, want := strings.Join(r.Metadata.InjectedTools, ","), "add,count,crash,echo,env_read_file,fancy,slow,stats"; got != want {
		t.Fatalf("injected tools %s, want %s", got, want)
	}
	if o := step(t, s, "first"); o.ResponseText() != "echo: first" || o.Metadata.TurnNumber != 1 || o.Done {
		t.Fatalf("turn 1: %+v", o.Metadata)
	}
	o := step(t, s, "history")
	if o.ResponseText() != "history: first | history" || o.Metadata.TurnNumber != 2 {
		t.Fatalf("turn 2: %q", o.ResponseText())
	}
	st := s.State()
	if st.StepCount != 2 || !st.Active || !st.HarnessAlive || st.HarnessPID == 0 {
		t.Fatalf("state %+v", st)
	}
	if n := len(s.Trajectory()); n != 4 {
		t.Fatalf("trajectory has %d events, want 4", n)
	}
}

func TestToolCallSeenByHarnessAndBridge(t *testing.T) {
	s := newSession(t, testConfig(t))
	reset(t, s)
	var streamed []wire.Event
	o, err := s.Step(context.Background(), wire.Action{Message: `tool add {"a":2,"b":3}`}, func(e wire.Event) { streamed = append(streamed, e) })
	if err != nil {
		t.Fatal(err)
	}
	var harnessCall, bridgeCall, bridgeResult bool
	for _, e := range o.Metadata.TurnEvents {
		switch {
		case e.Type == wire.EventToolCall && e.Origin == wire.OriginHarness && adaptertest.Data(t, e)["tool_name"] == "add":
			harnessCall = true
		case e.Type == wire.EventToolCall && e.Origin == wire.OriginBridge && adaptertest.Data(t, e)["tool_name"] == "add":
			bridgeCall = true
		case e.Type == wire.EventToolResult && e.Origin == wire.OriginBridge:
			bridgeResult = adaptertest.Data(t, e)["result"] == "5"
		}
		if e.Turn != 1 {
			t.Errorf("event %v has turn %d", e, e.Turn)
		}
	}
	if !harnessCall || !bridgeCall || !bridgeResult {
		t.Fatalf("events %+v", o.Metadata.TurnEvents)
	}
	if len(streamed) != len(o.Metadata.TurnEvents) || streamed[len(streamed)-1].Type != wire.EventTurnComplete {
		t.Fatalf("streamed %d events, observation has %d", len(streamed), len(o.Metadata.TurnEvents))
	}
	if !strings.Contains(o.ResponseText(), "add -> 5") {
		t.Fatalf("response %q", o.ResponseText())
	}
}

func TestCrashMidTurn(t *testing.T) {
	s := newSession(t, testConfig(t))
	reset(t, s)
	o := step(t, s, "stderr secret sauce;;crash 3")
	m := o.Metadata
	if !o.Done || m.ErrorType != wire.FailureHarnessCrashed || m.Exit == nil || m.Exit.Code != 3 || !strings.Contains(m.StderrTail, "secret sauce") {
		t.Fatalf("%+v", m)
	}
	if last := m.TurnEvents[len(m.TurnEvents)-1]; last.Type != wire.EventError || adaptertest.Data(t, last)["recoverable"] != false {
		t.Fatalf("last event %+v", last)
	}
	if _, err := s.Step(context.Background(), wire.Action{Message: "x"}, nil); !errors.Is(err, session.ErrNoEpisode) {
		t.Fatalf("step after failure: %v", err)
	}
	if st := s.State(); st.LastError == nil || st.LastError.Type != wire.FailureHarnessCrashed {
		t.Fatalf("state %+v", st)
	}
	reset(t, s) // a fresh episode works
	if o := step(t, s, "reply back"); o.ResponseText() != "back" {
		t.Fatal(o.ResponseText())
	}
}

func TestHangTimesOutAndKillsTree(t *testing.T) {
	s := newSession(t, testConfig(t))
	reset(t, s)
	esc := step(t, s, "escape ignore-term;;spawn ignore-term")
	escaped, spawned := pidIn(t, esc.ResponseText(), "escaped"), pidIn(t, esc.ResponseText(), "spawned")
	harnessPID := s.State().HarnessPID
	// Only the hanging turn gets the short budget (as HTTP /step timeout_s does).
	o, err := s.Step(context.Background(), wire.Action{Message: "hang", Timeout: 300 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Metadata.ErrorType != wire.FailureTurnTimeout || o.Metadata.Error != "harness turn exceeded 0.3 seconds" || !o.Done {
		t.Fatalf("%+v", o.Metadata)
	}
	for _, pid := range []int{harnessPID, escaped, spawned} {
		if adaptertest.Alive(pid) {
			t.Errorf("pid %d survived the timeout", pid)
		}
	}
}

func TestExitBetweenTurns(t *testing.T) {
	s := newSession(t, testConfig(t))
	reset(t, s)
	if o := step(t, s, "reply bye;;exit 5"); o.Done || o.ResponseText() != "bye" {
		t.Fatalf("%+v", o.Metadata)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.State().HarnessAlive && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	o := step(t, s, "hello?")
	if o.Metadata.ErrorType != wire.FailureHarnessExited || o.Metadata.Exit == nil || o.Metadata.Exit.Code != 5 {
		t.Fatalf("%+v", o.Metadata)
	}
}

func TestProtocolErrorAndFlood(t *testing.T) {
	cfg := testConfig(t)
	cfg.Episode.OutputLimit = units.ByteSize(256 << 10)
	s := newSession(t, cfg)
	reset(t, s)
	if o := step(t, s, "malformed"); o.Metadata.ErrorType != wire.FailureProtocol {
		t.Fatalf("%+v", o.Metadata)
	}
	reset(t, s)
	if o := step(t, s, "flood 2M"); o.Metadata.ErrorType != wire.FailureOutputLimit {
		t.Fatalf("%+v", o.Metadata)
	}
}

func TestMaxTurnsAndDone(t *testing.T) {
	cfg := testConfig(t)
	cfg.Episode.MaxTurns = 2
	s := newSession(t, cfg)
	reset(t, s)
	step(t, s, "one")
	o := step(t, s, "two")
	if !o.Done || o.Metadata.ErrorType != "" || o.Metadata.Error != "" || o.Metadata.HarnessDone || o.ResponseText() != "echo: two" {
		t.Fatalf("%+v", o.Metadata)
	}
	if _, err := s.Step(context.Background(), wire.Action{Message: "three"}, nil); !errors.Is(err, session.ErrEpisodeDone) {
		t.Fatalf("step after max_turns: %v", err)
	}
	reset(t, s)
	if o := step(t, s, "reply finished;;done"); !o.Done || !o.Metadata.HarnessDone || o.Metadata.ErrorType != "" {
		t.Fatalf("%+v", o.Metadata)
	}
	if _, err := s.Step(context.Background(), wire.Action{Message: "more"}, nil); !errors.Is(err, session.ErrEpisodeDone) {
		t.Fatalf("step after done: %v", err)
	}
}

func TestDoneWithoutEndOnDone(t *testing.T) {
	cfg := testConfig(t)
	f := false
	cfg.Episode.EndOnDone = &f
	s := newSession(t, cfg)
	reset(t, s)
	if o := step(t, s, "done"); o.Done || !o.Metadata.HarnessDone {
		t.Fatalf("%+v", o.Metadata)
	}
	step(t, s, "still going")
}

func TestStepBeforeResetAndConcurrentStep(t *testing.T) {
	s := newSession(t, testConfig(t))
	if _, err := s.Step(context.Background(), wire.Action{Message: "x"}, nil); !errors.Is(err, session.ErrNoEpisode) {
		t.Fatalf("before reset: %v", err)
	}
	reset(t, s)
	started := make(chan struct{})
	done := make(chan *wire.Observation)
	go func() {
		o, _ := s.Step(context.Background(), wire.Action{Message: "sleep 2s;;reply slept"}, func(wire.Event) {})
		done <- o
	}()
	go func() {
		for !s.Busy() {
			time.Sleep(time.Millisecond)
		}
		close(started)
	}()
	<-started
	if _, err := s.Step(context.Background(), wire.Action{Message: "y"}, nil); !errors.Is(err, session.ErrBusy) {
		t.Fatalf("concurrent step: %v", err)
	}
	if err := s.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if !o.Metadata.Cancelled || o.Done {
		t.Fatalf("interrupted turn: %+v", o.Metadata)
	}
}

func TestResetKillsOldTreeAndRevokesToken(t *testing.T) {
	s := newSession(t, testConfig(t))
	reset(t, s)
	env := step(t, s, "env HARNESSD_MCP_URL;;env HARNESSD_MCP_TOKEN").ResponseText()
	lines := strings.Split(env, "\n")
	url := strings.TrimPrefix(lines[0], "HARNESSD_MCP_URL=")
	token := strings.TrimPrefix(lines[1], "HARNESSD_MCP_TOKEN=")
	oldPID := s.State().HarnessPID
	if code := post(t, url, token); code != http.StatusOK {
		t.Fatalf("live token: HTTP %d", code)
	}
	reset(t, s)
	if adaptertest.Alive(oldPID) {
		t.Fatal("old harness survived reset")
	}
	if code := post(t, url, token); code == http.StatusOK {
		t.Fatal("old bridge still answers the old token")
	}
	env2 := step(t, s, "env HARNESSD_MCP_TOKEN").ResponseText()
	if strings.Contains(env2, token) {
		t.Fatal("token not rotated")
	}
}

func post(t *testing.T, url, token string) int {
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0 // nothing listening any more
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestRubricsAndHiddenGrader(t *testing.T) {
	cfg := testConfig(t)
	w := 2.0
	cfg.Rubrics = []rubric.Spec{
		{Name: "said-five", Type: rubric.KindMatch, Contains: "5"},
		{Name: "grader", Type: rubric.KindTool, Tool: "grade", On: rubric.OnDone, Weight: &w, Arguments: map[string]any{"answer": "{{response}}", "expected": "answer 5"}},
	}
	s := newSession(t, cfg)
	r := reset(t, s)
	for _, name := range r.Metadata.InjectedTools {
		if name == "grade" {
			t.Fatal("hidden grader injected")
		}
	}
	o := step(t, s, "tools;;tool grade {}")
	if strings.Contains(strings.SplitN(o.ResponseText(), "\n", 2)[0], "grade") || !strings.Contains(o.ResponseText(), "grade failed") && !strings.Contains(o.ResponseText(), "grade error") {
		t.Fatalf("grader visible or callable: %q", o.ResponseText())
	}
	if len(o.Metadata.RewardDetails) != 1 || o.Metadata.RewardDetails[0].Name != "said-five" {
		t.Fatalf("turn rubrics: %+v", o.Metadata.RewardDetails)
	}
	o = step(t, s, "reply answer 5;;done")
	if len(o.Metadata.RewardDetails) != 2 || o.Metadata.RewardDetails[1].Score == nil {
		t.Fatalf("done rubrics: %+v", o.Metadata.RewardDetails)
	}
	if want := 3.0; *o.Reward != want || *o.Metadata.RewardDetails[1].Score != 1 {
		t.Fatalf("reward %v, want %v (%+v)", *o.Reward, want, o.Metadata.RewardDetails)
	}
}

func TestStartupFailureCarriesStderr(t *testing.T) {
	s := newSession(t, testConfig(t, "--crash-on-start", "2", "--stderr", "missing API key"))
	o, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: "ep-x"})
	if err != nil {
		t.Fatal(err)
	}
	m := o.Metadata
	if !o.Done || m.ErrorType != wire.FailureStartupFailed || m.Exit == nil || m.Exit.Code != 2 || !strings.Contains(m.StderrTail, "missing API key") || m.EpisodeID != "ep-x" {
		t.Fatalf("%+v", m)
	}
	if _, err := s.Step(context.Background(), wire.Action{Message: "x"}, nil); !errors.Is(err, session.ErrNoEpisode) {
		t.Fatalf("step after startup failure: %v", err)
	}
}

func TestToolConflictIsAnError(t *testing.T) {
	cfg := testConfig(t)
	cfg.Tools = append(cfg.Tools, config.ToolConfig{Name: "calc2", Command: cfg.Tools[0].Command})
	s := newSession(t, cfg)
	if _, err := s.Reset(context.Background(), session.ResetOptions{}); err == nil || !strings.Contains(err.Error(), "calc2") {
		t.Fatalf("duplicate tools across sources: %v", err)
	}
}

func TestWorkspaceHomeAndRecord(t *testing.T) {
	tmpl := t.TempDir()
	os.WriteFile(filepath.Join(tmpl, "seed.txt"), []byte("seeded"), 0o644)
	cfg := testConfig(t)
	cfg.Workspace.Template = tmpl
	cfg.RecordDir = t.TempDir()
	s := newSession(t, cfg)
	if _, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: "rec-1"}); err != nil {
		t.Fatal(err)
	}
	o := step(t, s, "pwd;;env HOME;;write out.txt hi")
	lines := strings.Split(o.ResponseText(), "\n")
	ws, home := lines[0], strings.TrimPrefix(lines[1], "HOME=")
	if b, _ := os.ReadFile(filepath.Join(ws, "seed.txt")); string(b) != "seeded" {
		t.Fatal("template not copied")
	}
	if home == os.Getenv("HOME") || !strings.HasPrefix(home, cfg.Workspace.Root) {
		t.Fatalf("HOME %q not private", home)
	}
	b, err := os.ReadFile(filepath.Join(cfg.RecordDir, "rec-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := wire.ReadRecords(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var prev *wire.Event
	for _, r := range recs {
		if r.Kind != wire.RecordEvent {
			continue
		}
		if r.Event.Turn != 1 {
			t.Fatalf("event record of turn %d: %+v", r.Event.Turn, r.Event)
		}
		// A run of text the record's flusher found open is written in
		// pieces: consecutive text_output events of one source.
		if !(prev != nil && prev.Type == wire.EventTextOutput && r.Event.Type == wire.EventTextOutput && prev.Origin == r.Event.Origin) {
			n++
		}
		prev = r.Event
	}
	if n != len(o.Metadata.TurnEvents) {
		t.Fatalf("record has %d events, turn had %d", n, len(o.Metadata.TurnEvents))
	}
	reset(t, s)
	// The reset retires the old episode and closes it (its directories
	// removed) in the background, after its reply; Close waits for that.
	// Stat-ing at once raced the background close (1 to 2 runs in 30 under
	// -race failed, on main before issue 28's last changes as well).
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatal("old workspace survived its episode's retirement")
	}
}

func TestEpisodeTimeout(t *testing.T) {
	cfg := testConfig(t)
	cfg.Episode.EpisodeTimeout = units.Duration(400 * time.Millisecond)
	s := newSession(t, cfg)
	reset(t, s)
	o := step(t, s, "sleep 5s")
	if o.Metadata.ErrorType != wire.FailureEpisodeTimeout || !o.Done || !strings.Contains(o.Metadata.Error, "(episode.episode_timeout)") {
		t.Fatalf("%+v", o.Metadata) // the error names the knob
	}
}

func TestCloseKillsEverything(t *testing.T) {
	cfg := testConfig(t)
	cfg.Harness.Command = append(cfg.Harness.Command, "--ignore-term")
	s := newSession(t, cfg)
	reset(t, s)
	o := step(t, s, "orphan;;escape")
	pids := []int{s.State().HarnessPID, pidIn(t, o.ResponseText(), "orphaned"), pidIn(t, o.ResponseText(), "escaped")}
	dir := cfg.Workspace.Root
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if adaptertest.Alive(pid) {
			t.Errorf("pid %d survived Close", pid)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("session directories left: %v", ents)
	}
	if _, err := s.Reset(context.Background(), session.ResetOptions{}); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("reset after close: %v", err)
	}
}
