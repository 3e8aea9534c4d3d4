package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/client"
	presets "github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

// script drives every agent the same way: a message asking for the echo
// tool gets a call of it, the tool's result gets "TOOL-DONE <result>"
// followed by every user message so far, a
// message holding HOLD-THIS-TURN is never answered (until the agent gives
// up the request), and anything else is answered with every user message
// so far, which shows the context kept across turns. The turn after a
// cancel is matched first: Claude Code merges the cancelled message into
// the next user message.
const script = `{"rules": [
  {"name": "after-cancel", "when": {"user_contains": "Still there after the cancel?"}, "reply": {"text": "HISTORY: {{user_messages}}"}},
  {"name": "hold", "when": {"user_contains": "HOLD-THIS-TURN"}, "reply": {"delay": "10m"}},
  {"name": "after-tool", "when": {"tool_result": true}, "reply": {"text": "TOOL-DONE {{tool_result}} HISTORY: {{user_messages}}"}},
  {"name": "use-tool", "when": {"user_contains": "use the echo tool"},
   "reply": {"tool": "echo", "arguments": {"text": "ping-from-env"}}},
  {"name": "aux", "when": {"no_tools": true}, "reply": {"text": "MOCK-AUX"}},
  {"name": "history", "when": {}, "reply": {"text": "HISTORY: {{user_messages}}"}}
]}`

// emptyTurnAfterCancel lists agents whose first prompt after a cancel ends
// at once with end_turn and no text (claude-agent-acp 0.23.1: the cancelled
// query's result ends it); the model's answer to it arrives during the next
// turn.
var emptyTurnAfterCancel = map[string]bool{"claude-acp": true}

// Messages of the turns.
const (
	msgTool   = "Please use the echo tool."
	msgSecond = "Second message: use the echo tool again; what did I say before?"
	msgHold   = "HOLD-THIS-TURN until it is cancelled."
	msgAfter  = "Still there after the cancel?"
)

// suite is what every agent's test shares.
type suite struct {
	llm       *fakellm.Server
	llmURL    string
	harnessd  string
	tools     string // the testharness binary (its tools mode)
	agentsDir string
}

// pinned returns the dependencies of package.json.
func pinned(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	return pkg.Dependencies
}

// missing skips the test, or fails it in CI, where a missing prerequisite
// is a failure.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	testbin.Missing(t, format, args...)
}

// TestRealAgents drives every agent pinned in package.json through the real
// harnessd binary: over /ws (simulation) two turns with an env tool call
// through the bridge and the context kept, then over /harness (production)
// a turn interrupted by cancel and one after it; after each session the
// agent's whole process tree must be gone.
func TestRealAgents(t *testing.T) {
	deps := pinned(t)
	s := newSuite(t)
	var reports reportLog
	t.Cleanup(func() { reports.print(t) })

	// The presets cmd/harnessd links (adapters.go), by name.
	shipped := []*presets.Preset{presets.ClaudeACP(), presets.ClaudeCode(), presets.Codex(), presets.Copilot(),
		presets.Gemini(), presets.Goose(), presets.OpenCode(), presets.Qwen()}
	for _, p := range shipped {
		t.Run(p.Name, func(t *testing.T) {
			in := s.require(t, deps, p)
			t.Parallel()
			r := &report{agent: p.Name, version: in.Version}
			defer reports.add(r)
			t.Run("ws", func(t *testing.T) { s.wsEpisode(t, p, r) })
			t.Run("cancel", func(t *testing.T) { s.cancelEpisode(t, p, r) })
			s.sideTraffic(p, r)
		})
	}
}

// require returns the installed agent of preset p, skipping a preset that
// is not on npm and failing (skipping outside CI) where it is not
// installed as package.json pins it.
func (s *suite) require(t *testing.T, deps map[string]string, p *presets.Preset) presets.Install {
	t.Helper()
	pin, ok := deps[p.Package]
	if p.Package == "" || !ok {
		if p.Verified {
			t.Fatalf("preset %s says verified, but package.json does not pin %q", p.Name, p.Package)
		}
		t.Skipf("%s (%s) is not on npm, so not pinned in package.json: the preset is unverified", p.Name, p.Title)
	}
	if pin != p.Version || !p.Verified {
		t.Errorf("package.json pins %s@%s; the preset says %s (verified %v)", p.Package, pin, p.Version, p.Verified)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing(t, "node is not on PATH: the npm-installed agents cannot run")
	}
	in, ok := presets.Locate(p, s.agentsDir, string(filepath.ListSeparator))
	if !ok {
		missing(t, "%s is not installed in %s: run `make agents` (npm ci in integration/agents)", p.Program, s.agentsDir)
	}
	if in.Version != pin {
		t.Fatalf("%s %s is installed in %s, package.json pins %s: run `make agents`", p.Package, in.Version, s.agentsDir, pin)
	}
	return in
}

// newSuite starts the fake LLM (engine mode: the gateway's engine calls,
// the /ws episodes, get token ids; the passthrough calls of the /harness
// episodes are answered in the agent's own dialect) and finds the agents.
func newSuite(t testing.TB) *suite {
	t.Helper()
	s := &suite{harnessd: testbin.Path(t, "harnessd"), tools: testbin.Path(t, "testharness")}
	s.agentsDir = os.Getenv(presets.DirEnvVar)
	if s.agentsDir == "" {
		abs, err := filepath.Abs(filepath.Join("node_modules", ".bin"))
		if err != nil {
			t.Fatal(err)
		}
		s.agentsDir = abs
	}
	sc, err := fakellm.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	s.llm = fakellm.New(fakellm.Options{Script: sc, Engine: true})
	if s.llmURL, err = s.llm.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.llm.Close() })
	return s
}

// daemon is a running `harnessd serve`.
type daemon struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	dir    string // its TMPDIR: the episodes' workspaces and HOMEs are under dir/harnessd
}

// serve starts `harnessd serve` for agent p and waits for its address.
func (s *suite) serve(t testing.TB, p *presets.Preset, extra ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-level", "warn",
		"--agent", p.Name, "--agents-dir", s.agentsDir,
		// A path prefix per agent tells the agents apart in the fake LLM's log.
		"--model-url", s.llmURL + "/" + p.Name,
		// The gateway holds the real key; the agent gets the episode's.
		"--model-api-key-env", realKeyEnv,
		"--tool", "stdio:" + s.tools + " tools",
		"--startup-timeout", "90s", "--turn-timeout", "120s",
	}, extra...)
	cmd := exec.Command(s.harnessd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, realKeyEnv+"="+realKey)
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// Should the test binary die, the daemon dies with it (and its agents
	// with it: process gives every child a parent-death signal too).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	d := &daemon{cmd: cmd, stderr: stderr, dir: dir}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("harnessd did not stop within 60s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("harnessd output:\n%s", stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
			d.url = "http://" + strings.TrimSpace(string(b))
			return d
		}
		select {
		case <-exited:
			t.Fatalf("harnessd serve exited: %v\n%s", cmd.ProcessState, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("harnessd serve wrote no address within 30s\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func responseOf(obs *wire.Observation) string { return obs.ResponseText() }

// wsEpisode: reset, a turn calling the env tool through the bridge, a
// second one calling it again and showing the context, then close; the tree
// must be gone. The model upstream is the fake's engine mode behind the
// episode's gateway: every call's captured ids must be the engine's, in its
// turn, and the agent's tree and files must never hold the real key.
func (s *suite) wsEpisode(t *testing.T, p *presets.Preset, r *report) {
	// Every /ws episode pins the sampling (sampling_test.go).
	d := s.serve(t, p, "--model-upstream", "engine", "--config", s.pinConfig(t, p.Name))
	since := s.lastSeq()
	used := map[int]bool{}
	var ids wire.CallTokenIDs // the episode's calls, across its turns
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, err := client.Dial(ctx, d.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			env.Close()
		}
	}()
	t0 := time.Now()
	obs, err := env.Reset(ctx, client.ResetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.startup = time.Since(t0)
	if obs.Done {
		t.Fatalf("reset failed: %s: %s\nstderr tail:\n%s", obs.Metadata.ErrorType, obs.Metadata.Error, obs.Metadata.StderrTail)
	}
	r.isolation = obs.Metadata.Isolation
	if os.Getenv("CI") == "true" && r.isolation != "sandbox" {
		t.Errorf("the agent ran in %q isolation; CI must run real agents in the sandbox", r.isolation)
	}

	t0 = time.Now()
	obs, err = env.Step(ctx, msgTool)
	if err != nil {
		t.Fatal(err)
	}
	r.toolTurn = time.Since(t0)
	checkTurn(t, "tool turn", obs)
	r.captures = append(r.captures, checkCapture(t, 1, obs.Metadata.TurnEvents, s.agentEntries(p.Name, since), used, &ids))
	checkBridgeEcho(t, "tool turn", obs)
	turnEvents := obs.Metadata.TurnEvents
	for _, e := range obs.Metadata.TurnEvents {
		if tc, ok := e.Data.(*wire.ToolCall); ok && e.Origin == wire.OriginHarness && r.toolName == "" {
			r.toolName = tc.ToolName
		}
	}

	// Between the turns, the agent's last request again, non-streamed: it
	// opens turn 2 (every real agent streams).
	st, err := env.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dialect := replayNonStreaming(t, st.HarnessPID, obs.Metadata.TurnEvents)

	t0 = time.Now()
	obs, err = env.Step(ctx, msgSecond)
	if err != nil {
		t.Fatal(err)
	}
	r.plainTurn = time.Since(t0)
	checkTurn(t, "second turn", obs)
	r.captures = append(r.captures, checkCapture(t, 2, obs.Metadata.TurnEvents, s.agentEntries(p.Name, since), used, &ids))
	checkBridgeEcho(t, "second turn", obs)
	if resp := responseOf(obs); !strings.Contains(resp, "TOOL-DONE") || !strings.Contains(resp, msgTool) || !strings.Contains(resp, msgSecond) {
		t.Errorf("second turn: response %q, want TOOL-DONE and HISTORY: with both user messages", resp)
	}
	for i, c := range r.captures {
		if c.calls < 2 || c.toolCalls < 1 {
			t.Errorf("turn %d: %d captured calls, %d calling a tool; want a tool call and the answer to its result", i+1, c.calls, c.toolCalls)
		}
	}
	if !r.captures[1].streamed[dialect+" stream=false"] {
		t.Errorf("turn 2: the non-streamed %s replay was not captured: %v", dialect, r.captures[1].streamed)
	}
	checkAllMatched(t, s.agentEntries(p.Name, since), used)
	r.sampling = checkPinned(t, p.Name, d.url, obs.Metadata.EpisodeID, append(turnEvents, obs.Metadata.TurnEvents...), s.agentEntries(p.Name, since))

	st, err = env.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tree := agentTree(t, d.cmd.Process.Pid, "testharness tools")
	if !st.HarnessAlive || !containsPid(tree, st.HarnessPID) {
		t.Fatalf("state %+v: harness pid not in the tree %v", st, tree)
	}
	r.keyProcs, r.keyFiles = checkNoRealKey(t, tree, filepath.Join(d.dir, "harnessd"))
	r.tree = describeTree(tree)
	closed = true
	if err := env.Close(); err != nil {
		// The session ends with the connection either way; what matters
		// is the tree below.
		t.Logf("close: %v", err)
	}
	waitGone(t, "after closing the /ws session", tree, 30*time.Second)
}

// checkBridgeEcho checks that the turn called the env tool echo through the
// bridge with the script's arguments and got its result.
func checkBridgeEcho(t *testing.T, what string, obs *wire.Observation) {
	t.Helper()
	if resp := responseOf(obs); !strings.Contains(resp, "TOOL-DONE") || !strings.Contains(resp, "ping-from-env") {
		t.Errorf("%s: response %q, want TOOL-DONE with the tool's result", what, resp)
	}
	var call, result bool
	for _, e := range obs.Metadata.TurnEvents {
		if e.Origin != wire.OriginBridge {
			continue
		}
		switch d := e.Data.(type) {
		case *wire.ToolCall:
			if d.ToolName == "echo" {
				var args map[string]any
				json.Unmarshal(d.Arguments, &args)
				call = args["text"] == "ping-from-env"
			}
		case *wire.ToolResult:
			if d.ToolName == "echo" {
				result = d.Result == "ping-from-env" && d.Error == nil
			}
		}
	}
	if !call || !result {
		t.Errorf("%s: bridge tool_call %v, tool_result %v; events:\n%s", what, call, result, eventLines(obs.Metadata.TurnEvents))
	}
}

// cancelEpisode: over /harness (production mode), a turn held by the fake
// LLM is cancelled through the adapter's Interrupt, the next turn works and
// keeps the context, and closing the socket ends the tree.
func (s *suite) cancelEpisode(t *testing.T, p *presets.Preset, r *report) {
	d := s.serve(t, p, "--mode", "production")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h, err := client.DialHarness(ctx, d.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			h.Close()
		}
	}()
	type sent struct {
		ev  *wire.Event
		err error
	}
	done := make(chan sent, 1)
	go func() {
		ev, err := h.Send(ctx, msgHold, nil)
		done <- sent{ev, err}
	}()
	prefix := "/" + p.Name + "/"
	held := func(e fakellm.Entry) bool {
		return strings.HasPrefix(e.Path, prefix) && strings.HasPrefix(e.Rule, "hold")
	}
	if _, err := s.llm.Wait(ctx, func(es []fakellm.Entry) bool {
		for _, e := range es {
			if held(e) && e.Outcome == fakellm.OutcomePending {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the held model request never arrived: %v", err)
	}
	tree := agentTree(t, d.cmd.Process.Pid, "testharness tools")
	if len(tree) == 0 {
		t.Fatal("no agent process found under harnessd during the turn")
	}
	t0 := time.Now()
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	var res sent
	select {
	case res = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the cancelled turn did not end within 90s")
	}
	r.cancel = time.Since(t0)
	if res.err != nil {
		t.Fatalf("cancelled turn: %v", res.err)
	}
	if tc, ok := res.ev.Data.(*wire.TurnComplete); !ok || !tc.Cancelled {
		t.Errorf("cancelled turn ended with %s %v, want turn_complete with cancelled: true", res.ev.Type, res.ev.Data)
	}
	// Whether the agent gave up the held model request is a fact to report,
	// not a requirement.
	r.heldOutcome = "pending"
	for _, e := range s.llm.Requests() {
		if held(e) {
			r.heldOutcome = e.Outcome
		}
	}

	send := func(msg string) string {
		ev, err := h.Send(ctx, msg, nil)
		if err != nil {
			t.Fatalf("turn after the cancel: %v", err)
		}
		tc, _ := ev.Data.(*wire.TurnComplete)
		if tc == nil {
			return ""
		}
		return tc.Response
	}
	resp := send(msgAfter)
	if resp == "" && emptyTurnAfterCancel[p.Name] {
		// The agent's known quirk: the first prompt after a cancel ends at
		// once; its answer is reported with the next turn.
		r.quirk = "first prompt after a cancel ends at once with no text"
		resp = send(msgAfter + " (again)")
	}
	if !strings.Contains(resp, "HISTORY:") || !strings.Contains(resp, msgAfter) {
		t.Errorf("turn after the cancel: response %q, want HISTORY: with the new message", resp)
	}
	r.afterCancelSeesHold = strings.Contains(resp, "HOLD-THIS-TURN")
	tree = append(tree, agentTree(t, d.cmd.Process.Pid, "testharness tools")...)
	closed = true
	h.Close()
	waitGone(t, "after closing the /harness session", tree, 30*time.Second)
}

// sideTraffic records what else the agent asked the model endpoint.
func (s *suite) sideTraffic(p *presets.Preset, r *report) {
	prefix := "/" + p.Name + "/"
	kinds := map[string]int{}
	for _, e := range s.llm.Requests() {
		if !strings.HasPrefix(e.Path, prefix) {
			continue
		}
		k := e.Kind
		if e.Kind == fakellm.KindGenerate {
			k = string(e.Dialect)
			if e.Rule == "aux" {
				k += "(aux)"
			}
			r.model = e.Model
		}
		kinds[k]++
	}
	r.requests = kinds
}

func checkTurn(t *testing.T, what string, obs *wire.Observation) {
	t.Helper()
	if obs.Done || obs.Metadata.ErrorType != "" {
		t.Fatalf("%s: done=%v %s: %s\nstderr tail:\n%s\nevents:\n%s", what, obs.Done, obs.Metadata.ErrorType,
			obs.Metadata.Error, obs.Metadata.StderrTail, eventLines(obs.Metadata.TurnEvents))
	}
}

func eventLines(evs []wire.Event) string {
	var b strings.Builder
	for _, e := range evs {
		d, _ := json.Marshal(e.Data)
		if len(d) > 300 {
			d = append(d[:300], "…"...)
		}
		fmt.Fprintf(&b, "  %s %s %s\n", e.Origin, e.Type, d)
	}
	return b.String()
}

func containsPid(tree []proc, pid int) bool {
	for _, p := range tree {
		if p.pid == pid {
			return true
		}
	}
	return false
}

func describeTree(tree []proc) string {
	var names []string
	for _, p := range tree {
		names = append(names, exeBase(p.cmd))
	}
	sort.Strings(names)
	return fmt.Sprintf("%d: %s", len(tree), strings.Join(names, " "))
}

// report is what the suite records per agent.
type report struct {
	agent, version, model, toolName, tree, heldOutcome, quirk string
	isolation                                                 string
	startup, toolTurn, plainTurn, cancel                      time.Duration
	afterCancelSeesHold                                       bool
	requests                                                  map[string]int
	captures                                                  []capture // per turn of the /ws episode
	sampling                                                  string    // what the agent asked of sampling (the pin replaced it)
	keyProcs, keyFiles                                        int       // checked for the real key
}

type reportLog struct {
	mu sync.Mutex
	rs []*report
}

func (l *reportLog) add(r *report) {
	l.mu.Lock()
	l.rs = append(l.rs, r)
	l.mu.Unlock()
}

// print logs one line per agent (go test -v shows them).
func (l *reportLog) print(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.rs, func(i, j int) bool { return l.rs[i].agent < l.rs[j].agent })
	for _, r := range l.rs {
		var calls []string
		for i, c := range r.captures {
			calls = append(calls, fmt.Sprintf("turn %d: %d calls (%d tool)", i+1, c.calls, c.toolCalls))
		}
		t.Logf("%-12s %-8s %-7s reset %-6s tool turn %-6s second tool turn %-6s cancel %-6s | model %q tool %q | tree %s | held request %s, cancelled prompt in context %v | requests %v | gateway: %s, ids equal; agent requests %s; real key in none of %d processes, %d files | sampling asked (pinned instead): %s | %s",
			r.agent, r.version, r.isolation, round(r.startup), round(r.toolTurn), round(r.plainTurn), round(r.cancel),
			r.model, r.toolName, r.tree, r.heldOutcome, r.afterCancelSeesHold, r.requests,
			strings.Join(calls, ", "), streamSummary(r.captures...), r.keyProcs, r.keyFiles, r.sampling, r.quirk)
	}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

// lockedBuffer collects a subprocess's output safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
