package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// The project directory names are Claude Code 2.1.197's (computed by its
// own function, run under node, for these paths).
func TestProjectDirName(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		{"/tmp/hfork-exp/ws1", "-tmp-hfork-exp-ws1"},
		{"/tmp/a b/ç.d", "-tmp-a-b---d"},
		{"/tmp/" + strings.Repeat("é/x", 70) + "/ws", "-tmp-" + strings.Repeat("--x", 65) + "-x9zr5o"},
		{"/tmp/" + strings.Repeat("😀", 120), "-tmp-" + strings.Repeat("-", 195) + "-z7abkf"},
	} {
		if got := ProjectDirName(c.dir); got != c.want {
			t.Errorf("ProjectDirName(%q) = %q, want %q", c.dir, got, c.want)
		}
	}
}

func forkState(t *testing.T, a *Adapter) (*harness.ForkState, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return a.ForkState(ctx)
}

const sessionID = "0b4f1c2e-7d3a-4e5f-9a8b-1c2d3e4f5a6b"

// ForkState names the agent's session once its session file holds the
// turn's last message (Claude Code writes it behind its output); an agent
// without a session or without session files cannot fork.
func TestForkStateWaitsForTheSessionFile(t *testing.T) {
	l := launch(t, nil, "--session-id", sessionID)
	l.Env = append(l.Env, "CLAUDE_CONFIG_DIR="+filepath.Join(l.Home, "cfg"))
	a := startLaunch(t, l)
	if _, err := forkState(t, a); !errors.Is(err, harness.ErrForkUnsupported) || !strings.Contains(err.Error(), "before its first turn") {
		t.Fatalf("before the first turn: %v", err)
	}
	if _, _, err := turn(t, a, 1, "reply hello"); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	last := a.lastUUID
	a.mu.Unlock()
	if last == "" {
		t.Fatal("no message uuid noted from the turn's lines")
	}
	file := filepath.Join(l.Home, "cfg", "projects", ProjectDirName(l.Workspace), sessionID+".jsonl")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	// The file without the turn's last message: ForkState waits.
	if err := os.WriteFile(file, []byte(`{"type":"user","uuid":"other"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		fs  *harness.ForkState
		err error
	}
	done := make(chan result, 1)
	go func() {
		fs, err := a.ForkState(context.Background())
		done <- result{fs, err}
	}()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("ForkState returned before the session file held the last message: %+v %v", r.fs, r.err)
	default:
	}
	f.WriteString(`{"type":"assistant","uuid":"` + last + `"}` + "\n")
	f.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var d forkData
	if r.fs.Mechanism != harness.ForkResume || json.Unmarshal(r.fs.Data, &d) != nil || d.SessionID != sessionID || d.Project != ProjectDirName(l.Workspace) {
		t.Fatalf("fork state %+v %s", r.fs, r.fs.Data)
	}
	// The harness goes on.
	if res, _, err := turn(t, a, 2, "reply still here"); err != nil || res.Response != "still here" {
		t.Fatalf("after the fork: %+v %v", res, err)
	}

	b := started(t, map[string]any{"extra_args": []any{"--no-session-persistence"}}, "--session-id", sessionID)
	if _, _, err := turn(t, b, 1, "reply hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := forkState(t, b); !errors.Is(err, harness.ErrForkUnsupported) || !strings.Contains(err.Error(), "--no-session-persistence") {
		t.Fatalf("with --no-session-persistence: %v", err)
	}
}

// A sibling's start finds the parent's session in its copy of HOME and
// links it into the project directory of its own working directory; a
// fork state it cannot resume from fails the start before anything runs.
func TestResumeArgs(t *testing.T) {
	home := t.TempDir()
	parentProject := ProjectDirName("/elsewhere/parent/workspace")
	src := filepath.Join(home, ".claude", "projects", parentProject, sessionID+".jsonl")
	if err := os.MkdirAll(filepath.Dir(src), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte(`{"uuid":"u1"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	l := &harness.Launch{Command: []string{"claude"}, Home: home, Workspace: ws, Env: []string{"HOME=" + home}}
	for _, project := range []string{parentProject, "", "gone"} {
		data, _ := json.Marshal(forkData{SessionID: sessionID, Project: project})
		l.Fork = &harness.ForkState{Mechanism: harness.ForkResume, Data: data}
		args, id, err := resumeArgs(l, Options{MCPConfigStyle: StyleClaude})
		if err != nil || id != sessionID || !reflect.DeepEqual(args, []string{"--resume", sessionID, "--fork-session"}) {
			t.Fatalf("project %q: %q %q %v", project, args, id, err)
		}
		dst := filepath.Join(home, ".claude", "projects", launchProject(l), sessionID+".jsonl")
		if b, err := os.ReadFile(dst); err != nil || string(b) != `{"uuid":"u1"}`+"\n" {
			t.Fatalf("the session where the sibling looks: %q %v", b, err)
		}
	}
	// The parent's model goes on the sibling's command line (Claude Code
	// would resume with the session's stripped id), unless the
	// configuration names one.
	data, _ := json.Marshal(forkData{SessionID: sessionID, Project: parentProject, Model: "claude-opus-4-8[1m]"})
	l.Fork = &harness.ForkState{Mechanism: harness.ForkResume, Data: data}
	for _, c := range []struct {
		o    Options
		want []string
	}{
		{Options{MCPConfigStyle: StyleClaude}, []string{"--resume", sessionID, "--fork-session", "--model", "claude-opus-4-8[1m]"}},
		{Options{MCPConfigStyle: StyleClaude, Model: "sonnet"}, []string{"--resume", sessionID, "--fork-session"}},
		{Options{MCPConfigStyle: StyleClaude, ExtraArgs: []string{"--model", "haiku"}}, []string{"--resume", sessionID, "--fork-session"}},
	} {
		if args, _, err := resumeArgs(l, c.o); err != nil || !reflect.DeepEqual(args, c.want) {
			t.Errorf("model %q, options %+v: %q %v, want %q", "claude-opus-4-8[1m]", c.o, args, err, c.want)
		}
	}
	for _, c := range []struct {
		fs   harness.ForkState
		o    Options
		want string
	}{
		{harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"` + sessionID + `","model":"--dangerously-skip-permissions"}`)}, Options{MCPConfigStyle: StyleClaude}, "not a model id"},
		{harness.ForkState{Mechanism: harness.ForkLine, Data: json.RawMessage(`{}`)}, Options{MCPConfigStyle: StyleClaude}, `not "line"`},
		{harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"--dangerously"}`)}, Options{MCPConfigStyle: StyleClaude}, "not a Claude Code session id"},
		{harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"11111111-2222-3333-4444-555555555555"}`)}, Options{MCPConfigStyle: StyleClaude}, "is not in"},
		{harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"` + sessionID + `"}`)}, Options{MCPConfigStyle: StyleQwen}, "not Qwen Code's"},
		{harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"` + sessionID + `"}`)},
			Options{MCPConfigStyle: StyleClaude, ExtraArgs: []string{noPersistenceFlag}}, noPersistenceFlag},
	} {
		l.Fork = &c.fs
		if _, _, err := resumeArgs(l, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want an error saying %q", c.fs.Mechanism, c.fs.Data, err, c.want)
		}
	}
	// Through Start: a startup_failed Failure, nothing started.
	sl := launch(t, nil)
	sl.Fork = &harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"11111111-2222-3333-4444-555555555555"}`)}
	a := New()
	err := a.Start(context.Background(), sl)
	if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureStartupFailed || a.Process() != nil {
		t.Fatalf("start from a missing session: %v (process %v)", err, a.Process())
	}
}
