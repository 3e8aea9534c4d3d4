package agents

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/streamjson"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// realAgent returns the pinned install of preset p (integration/agents, or
// HARNESSD_AGENTS_DIR), skipping the test without it (failing under
// CI=true).
func realAgent(t *testing.T, p *Preset) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testbin.Missing(t, "node is not on PATH: the npm-installed agents cannot run")
	}
	dir := os.Getenv(DirEnvVar)
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("..", "..", "integration", "agents", "node_modules", ".bin"))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
	}
	in, ok := Locate(p, dir, string(filepath.ListSeparator))
	if !ok {
		testbin.Missing(t, "%s is not installed in %s: run `make agents` (npm ci in integration/agents)", p.Program, dir)
	}
	if in.Version != p.Version {
		t.Fatalf("%s %s is installed in %s, the preset is verified with %s: run `make agents`", p.Package, in.Version, dir, p.Version)
	}
	return in.Path
}

// agentLaunch is a launch of command for an episode with its own
// workspace and HOME, its model the fake LLM under path prefix tag.
func agentLaunch(t *testing.T, sup *process.Supervisor, command []string, ws, home, llm, tag string) *harness.Launch {
	t.Helper()
	tmp := t.TempDir()
	return &harness.Launch{
		EpisodeID:      "ep-" + tag,
		Command:        command,
		Workspace:      ws,
		Home:           home,
		Env:            process.DefaultEnviron(map[string]string{"HOME": home, "TMPDIR": tmp}),
		Model:          harness.ModelAccess{Root: llm + "/" + tag, Name: "fake-model", Key: "episode-key-" + tag},
		StartupTimeout: 90 * time.Second,
		StopGrace:      5 * time.Second,
		MaxLineBytes:   1 << 20,
		Supervisor:     sup,
	}
}

func agentTurn(t *testing.T, a harness.Adapter, n int, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := a.Turn(ctx, harness.TurnInput{Number: n, Message: msg, OutputLimit: 16 << 20}, func(wire.Event) {})
	if err != nil {
		_, tail, _ := a.Diagnostics()
		t.Fatalf("turn %d: %v\nstderr: %s", n, err, tail)
	}
	return res.Response
}

// copyTree copies the directory src to dst (which must not exist): what a
// sibling's HOME is, a copy of its parent's.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil // sockets and the like stay behind
	})
}

// Claude Code forks by its own resume: after two turns the parent's
// ForkState names its session; a sibling started with Launch.Fork against
// a copy of the parent's HOME, in a workspace at another path (so another
// Claude Code project directory), answers a third turn that sees the
// parent's conversation, and the fake LLM's log shows the sibling's first
// request carrying the parent's messages. The parent goes on unchanged.
func TestClaudeCodeForkByResume(t *testing.T) {
	p := ClaudeCode()
	program := realAgent(t, p)
	sc, err := fakellm.ParseScript([]byte(`{"rules": [{"name": "history", "when": {}, "reply": {"text": "HISTORY: {{user_messages}}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	llm := fakellm.New(fakellm.Options{Script: sc})
	url, err := llm.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { llm.Close() })
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Close(context.Background(), 0) })
	newAdapter := func() harness.Adapter {
		a, err := Factory(p, testAdapters)(&harness.Config{Command: p.Command(program)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Stop(context.Background()) })
		return a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	root := t.TempDir()
	ws1, home1 := filepath.Join(root, "parent", "workspace"), filepath.Join(root, "parent", "home")
	for _, d := range []string{ws1, home1} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	parent := newAdapter()
	if _, err := parent.(harness.Forker).ForkState(ctx); err == nil {
		t.Fatal("a fork state before the agent started")
	}
	if err := parent.Start(ctx, agentLaunch(t, sup, p.Command(program), ws1, home1, url, "parent")); err != nil {
		t.Fatal(err)
	}
	if _, err := parent.(harness.Forker).ForkState(ctx); !errors.Is(err, harness.ErrForkUnsupported) {
		t.Fatalf("fork before the first turn: %v, want ErrForkUnsupported (no session yet)", err)
	}
	if r := agentTurn(t, parent, 1, "first PARENT-ONE"); r != "HISTORY: first PARENT-ONE" {
		t.Fatalf("turn 1: %q", r)
	}
	if r := agentTurn(t, parent, 2, "second PARENT-TWO"); r != "HISTORY: first PARENT-ONE | second PARENT-TWO" {
		t.Fatalf("turn 2: %q", r)
	}
	begin := time.Now()
	fs, err := parent.(harness.Forker).ForkState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	forkStateTook := time.Since(begin)
	var data struct {
		SessionID string `json:"session_id"`
	}
	if fs.Mechanism != harness.ForkResume || json.Unmarshal(fs.Data, &data) != nil || data.SessionID == "" {
		t.Fatalf("fork state %+v %s", fs, fs.Data)
	}

	ws2, home2 := filepath.Join(root, "sibling-one", "workspace"), filepath.Join(root, "sibling-one", "home")
	if err := os.MkdirAll(ws2, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(home1, home2); err != nil {
		t.Fatal(err)
	}
	// The copy holds the session under the parent's project directory
	// only: Claude Code in ws2 would not find it (positive control of the
	// link the adapter makes).
	siblingFile := filepath.Join(home2, ".claude", "projects", streamjson.ProjectDirName(ws2), data.SessionID+".jsonl")
	if _, err := os.Stat(siblingFile); !os.IsNotExist(err) {
		t.Fatalf("the copy of HOME already has %s (%v): the test does not test the link", siblingFile, err)
	}
	sl := agentLaunch(t, sup, p.Command(program), ws2, home2, url, "sibling")
	sl.Fork = fs
	sibling := newAdapter()
	begin = time.Now()
	if err := sibling.Start(ctx, sl); err != nil {
		t.Fatal(err)
	}
	t.Logf("ForkState took %s (waiting for the session file), the resumed sibling was ready in %s", forkStateTook, time.Since(begin))
	if _, err := os.Stat(siblingFile); err != nil {
		t.Fatalf("the adapter did not put the session where the sibling looks: %v", err)
	}
	want := "HISTORY: first PARENT-ONE | second PARENT-TWO | third SIBLING"
	if r := agentTurn(t, sibling, 3, "third SIBLING"); r != want {
		t.Fatalf("sibling's turn 3: %q, want %q", r, want)
	}
	var first *fakellm.Entry
	for _, e := range llm.Requests() {
		if strings.HasPrefix(e.Path, "/sibling/") && e.Kind == "generate" {
			first = &e
			break
		}
	}
	if first == nil {
		t.Fatalf("no request of the sibling in the fake LLM's log: %+v", llm.Requests())
	}
	body := string(first.Body)
	for _, m := range []string{"first PARENT-ONE", "second PARENT-TWO", "third SIBLING"} {
		if !strings.Contains(body, m) {
			t.Errorf("the sibling's first request lacks %q: %.2000s", m, body)
		}
	}
	// The sibling's own session is a new one, itself forkable.
	sfs, err := sibling.(harness.Forker).ForkState(ctx)
	var sdata struct {
		SessionID string `json:"session_id"`
	}
	if err != nil || json.Unmarshal(sfs.Data, &sdata) != nil || sdata.SessionID == data.SessionID || sdata.SessionID == "" {
		t.Errorf("the sibling's fork state %v %v: want a session of its own", sfs, err)
	}
	// The parent goes on without the sibling's turn.
	if r := agentTurn(t, parent, 3, "third PARENT-THREE"); r != "HISTORY: first PARENT-ONE | second PARENT-TWO | third PARENT-THREE" {
		t.Fatalf("parent's turn 3: %q", r)
	}
}

// forkByLoad runs the ACP fork of preset p: two turns, ForkState, a sibling
// against a copy of HOME in a workspace at another path, a third turn there
// that must see the parent's two messages.
func forkByLoad(t *testing.T, p *Preset) {
	program := realAgent(t, p)
	sc, err := fakellm.ParseScript([]byte(`{"rules": [{"name": "aux", "when": {"no_tools": true}, "reply": {"text": "MOCK-AUX"}},
		{"name": "history", "when": {}, "reply": {"text": "HISTORY: {{user_messages}}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	llm := fakellm.New(fakellm.Options{Script: sc})
	url, err := llm.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { llm.Close() })
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Close(context.Background(), 0) })
	reg := testAdapters
	newAdapter := func() harness.Adapter {
		a, err := Factory(p, reg)(&harness.Config{Command: p.Command(program)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Stop(context.Background()) })
		return a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := t.TempDir()
	dirs := func(name string) (string, string) {
		ws, home := filepath.Join(root, name, "workspace"), filepath.Join(root, name, "home")
		if err := os.MkdirAll(ws, 0o700); err != nil {
			t.Fatal(err)
		}
		return ws, home
	}
	ws1, home1 := dirs("parent")
	if err := os.MkdirAll(home1, 0o700); err != nil {
		t.Fatal(err)
	}
	parent := newAdapter()
	if err := parent.Start(ctx, agentLaunch(t, sup, p.Command(program), ws1, home1, url, "parent")); err != nil {
		t.Fatal(err)
	}
	agentTurn(t, parent, 1, "first PARENT-ONE")
	agentTurn(t, parent, 2, "second PARENT-TWO")
	fs, err := parent.(harness.Forker).ForkState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws2, home2 := dirs("sibling")
	if err := copyTree(home1, home2); err != nil {
		t.Fatal(err)
	}
	sl := agentLaunch(t, sup, p.Command(program), ws2, home2, url, "sibling")
	sl.Fork = fs
	sibling := newAdapter()
	begin := time.Now()
	if err := sibling.Start(ctx, sl); err != nil {
		t.Fatal(err)
	}
	t.Logf("the sibling loaded its parent's session in %s", time.Since(begin))
	r := agentTurn(t, sibling, 3, "third SIBLING")
	for _, m := range []string{"first PARENT-ONE", "second PARENT-TWO", "third SIBLING"} {
		if !strings.Contains(r, m) {
			t.Errorf("the sibling's turn 3 lacks %q: %q", m, r)
		}
	}
}

func TestACPForkBySessionLoad(t *testing.T) {
	for _, p := range []*Preset{Qwen()} {
		t.Run(p.Name, func(t *testing.T) { forkByLoad(t, p) })
	}
}

// The Qwen Code resume hook copies the parent's session into the project
// directory of the sibling's working directory with the records' cwd made
// the sibling's, keeping every other byte of a record; a state without a
// session it can find fails.
func TestQwenResumeRelocates(t *testing.T) {
	home := t.TempDir()
	parentDir, siblingDir := "/work/parent ws", "/work/sibling ws"
	id := "58ef4ee3-205c-49c8-b58d-cb409113680f"
	src := filepath.Join(home, ".qwen", "projects", sanitizePath(parentDir), "chats", id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(src), 0o700); err != nil {
		t.Fatal(err)
	}
	records := `{"uuid":"a","type":"user","cwd":"/work/parent ws","message":{"parts":[{"text":"hi <b>"}]}}` + "\n" +
		`{"uuid":"b","type":"assistant","cwd":"/work/parent ws"}` + "\n" + `{"uuid":"c","type":"system"}` + "\n"
	if err := os.WriteFile(src, []byte(records), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &Episode{Home: home, Dir: siblingDir}
	state := &harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"` + id + `"}`)}
	if err := qwenResume(e, state); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(home, ".qwen", "projects", "-work-sibling-ws", "chats", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cwd":"/work/sibling ws","message":{"parts":[{"text":"hi <b>"}]},"type":"user","uuid":"a"}` + "\n" +
		`{"cwd":"/work/sibling ws","type":"assistant","uuid":"b"}` + "\n" + `{"uuid":"c","type":"system"}` + "\n"
	if string(got) != want {
		t.Fatalf("relocated session:\n%s\nwant\n%s", got, want)
	}
	if b, _ := os.ReadFile(src); string(b) != records {
		t.Errorf("the parent's copy changed: %s", b)
	}
	for _, bad := range []*harness.ForkState{
		{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"11111111-2222-3333-4444-555555555555"}`)},
		{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"../../etc/passwd"}`)},
		{Mechanism: harness.ForkLine, Data: json.RawMessage(`{}`)},
	} {
		if err := qwenResume(e, bad); err == nil {
			t.Errorf("%s %s: resumed", bad.Mechanism, bad.Data)
		}
	}
}

// A preset without a fork mechanism refuses to start from a fork state
// (its agent would otherwise start fresh, or load unverified), and its
// ForkState says what the agent would offer.
func TestPresetWithoutForkRefuses(t *testing.T) {
	p := Gemini()
	a, err := Factory(p, testAdapters)(&harness.Config{Command: []string{"/nonexistent/gemini"}})
	if err != nil {
		t.Fatal(err)
	}
	l := &harness.Launch{Command: []string{"/nonexistent/gemini"}, Home: t.TempDir(), Workspace: t.TempDir(),
		Fork: &harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"s"}`)}}
	err = a.Start(context.Background(), l)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "session/load") {
		t.Fatalf("start from a fork state: %v", err)
	}
	if _, err := a.(harness.Forker).ForkState(context.Background()); !errors.Is(err, harness.ErrForkUnsupported) || !strings.Contains(err.Error(), "not built") {
		t.Fatalf("fork state: %v", err)
	}
}
