package agents

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
)

// A fork sibling's HOME is a copy of its parent's (docs/fork.md, "The
// directories: snapshots"), and the parent's HOME is the harness's to
// write: symbolic links included, which the copy keeps as links. The
// daemon then prepares the sibling's agent in that HOME on the host, as
// itself: the preset's setup writes its settings file, and Qwen Code's
// resume hook finds, reads and writes the session file. Each of these
// follows a link the parent planted. These tests run the qwen preset's
// own Prepare (the code a sibling's Start runs) on a HOME laid out as the
// parent's harness would leave it (the red team's round 5 found each of
// these doors open: os.* calls followed the links; now every read and
// write goes through beneath.Dir), with a "host" directory beside it
// standing for everything outside the HOME (another session's files,
// record_dir, /etc).

const parentSessionID = "58ef4ee3-205c-49c8-b58d-cb409113680f"

// forkSibling returns a qwen adapter, the sibling's HOME (holding the
// parent's session under the parent's project) and a directory outside it.
func forkSibling(t *testing.T) (*Adapter, *harness.Launch, string, string) {
	t.Helper()
	a, err := Factory(Qwen(), testAdapters)(&harness.Config{Command: []string{"/nonexistent/qwen"}})
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	home, host := filepath.Join(base, "home"), filepath.Join(base, "host")
	for _, d := range []string{home, host} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	l := &harness.Launch{Command: []string{"/nonexistent/qwen"}, Home: home, Workspace: t.TempDir(),
		Fork: &harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"` + parentSessionID + `"}`)}}
	return a.(*Adapter), l, home, host
}

// parentSession writes the parent's session file under project in home.
func parentSession(t *testing.T, home, project string) string {
	t.Helper()
	p := filepath.Join(home, ".qwen", "projects", project, "chats", parentSessionID+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"uuid":"a","type":"user","cwd":"/parent"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestForkSetupWritesNothingThroughAgentLinks: the parent's harness makes
// ~/.qwen/settings.json a link to a file outside its HOME; a sibling's
// Prepare (qwenSetup through Episode.WriteFile: os.WriteFile, which
// followed links) truncated and rewrote that file as the daemon; it must
// not. The control: with no link, the settings are written inside the
// HOME.
func TestForkSetupWritesNothingThroughAgentLinks(t *testing.T) {
	a, l, home, _ := forkSibling(t)
	parentSession(t, home, "-parent")
	if _, err := a.Prepare(l); err != nil {
		t.Fatalf("control: prepare: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".qwen", "settings.json")); err != nil || !strings.Contains(string(b), "{") {
		t.Fatalf("control: settings.json in HOME: %q %v", b, err)
	}

	a, l, home, host := forkSibling(t)
	parentSession(t, home, "-parent")
	victim := filepath.Join(host, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(home, ".qwen", "settings.json")); err != nil {
		t.Fatal(err)
	}
	_, err := a.Prepare(l)
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("a file outside the sibling's HOME, linked from its ~/.qwen/settings.json, was rewritten by the daemon (prepare: %v): now %q", err, clipTo(b, 80))
	}
}

// TestForkResumeReadsNothingThroughAgentLinks: the parent's harness
// removes its own session file and leaves, under another project, a link
// named like it to a JSONL file outside its HOME (another episode's
// record file, say). qwenResume's Glob finds the link; os.ReadFile
// followed it, and the file's content landed in the sibling's HOME, where
// the sibling's harness reads it; it must not. The control: a real session
// file is copied.
func TestForkResumeReadsNothingThroughAgentLinks(t *testing.T) {
	a, l, home, _ := forkSibling(t)
	parentSession(t, home, "-parent")
	want := filepath.Join(home, ".qwen", "projects", sanitizePath(l.Dir()), "chats", parentSessionID+".jsonl")
	if _, err := a.Prepare(l); err != nil {
		t.Fatalf("control: prepare: %v", err)
	}
	if b, err := os.ReadFile(want); err != nil || !strings.Contains(string(b), `"uuid":"a"`) {
		t.Fatalf("control: relocated session: %q %v", b, err)
	}

	a, l, home, host := forkSibling(t)
	want = filepath.Join(home, ".qwen", "projects", sanitizePath(l.Dir()), "chats", parentSessionID+".jsonl")
	secret := filepath.Join(host, "other-episode.jsonl")
	if err := os.WriteFile(secret, []byte(`{"kind":"message","content":"another session's secret"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".qwen", "projects", "-anything", "chats", parentSessionID+".jsonl")
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	_, err := a.Prepare(l)
	if b, _ := os.ReadFile(want); strings.Contains(string(b), "secret") {
		t.Errorf("a file outside the sibling's HOME, linked from a session file of its ~/.qwen/projects, was copied into the sibling's HOME by the daemon (prepare: %v): %q", err, b)
	}
}

// TestForkResumeCreatesNothingThroughAgentLinks: the parent's harness
// makes the sibling's session path (its project directory for the
// sibling's working directory) a dangling link to a path outside its
// HOME. os.Stat said no file is there; qwenResume's os.WriteFile followed
// the link and created the file outside the HOME, as the daemon, with
// content the harness chose (its session's records); it must not. The
// control: the file is created in the HOME without the link.
func TestForkResumeCreatesNothingThroughAgentLinks(t *testing.T) {
	a, l, home, _ := forkSibling(t)
	parentSession(t, home, "-parent")
	want := filepath.Join(home, ".qwen", "projects", sanitizePath(l.Dir()), "chats", parentSessionID+".jsonl")
	if _, err := a.Prepare(l); err != nil {
		t.Fatalf("control: prepare: %v", err)
	}
	if _, err := os.Lstat(want); err != nil {
		t.Fatalf("control: %v", err)
	}

	a, l, home, host := forkSibling(t)
	parentSession(t, home, "-parent")
	want = filepath.Join(home, ".qwen", "projects", sanitizePath(l.Dir()), "chats", parentSessionID+".jsonl")
	planted := filepath.Join(host, "forged.jsonl") // e.g. <record_dir>/<an episode>.jsonl
	if err := os.MkdirAll(filepath.Dir(want), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(planted, want); err != nil {
		t.Fatal(err)
	}
	_, err := a.Prepare(l)
	if b, rerr := os.ReadFile(planted); rerr == nil {
		t.Errorf("the daemon created %s outside the sibling's HOME through a dangling link (prepare: %v), holding %q", planted, err, clipTo(b, 80))
	}
}

// TestForkSettleDoesNotBlockOnAFIFO: when a fork is asked, the qwen preset
// waits for the parent's session file (qwenSettle) by reading it in a
// loop, bounded by SettleTimeout or the context. The parent's harness
// makes that file a FIFO: a blocking open(2) waited for a writer, outside
// the loop's select, so the daemon's fork request never returned, whatever
// its context said; the read must not block. (A link to /dev/zero is a
// link out of the HOME, refused by beneath.Dir; a huge file is bounded by
// MaxSessionFile.) The
// control: with a regular file that never holds the turn, the wait ends
// with the context.
func TestForkSettleDoesNotBlockOnAFIFO(t *testing.T) {
	home := t.TempDir()
	e := &Episode{Home: home, Dir: "/parent"}
	file := filepath.Join(home, ".qwen", "projects", sanitizePath(e.Dir), "chats", parentSessionID+".jsonl")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	state := &harness.ForkState{Mechanism: harness.ForkResume, Data: json.RawMessage(`{"session_id":"` + parentSessionID + `"}`)}
	settle := func() (error, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- Qwen().ForkSettle(ctx, e, state, "the last message") }()
		select {
		case err := <-done:
			return err, true
		case <-time.After(5 * time.Second):
			return nil, false
		}
	}
	if err := os.WriteFile(file, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err, ok := settle(); !ok || err == nil {
		t.Fatalf("control: a file without the turn: returned %v, err %v; want the context's error", ok, err)
	}
	os.Remove(file)
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Free a blocked open, if any.
		if f, err := os.OpenFile(file, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	if _, ok := settle(); !ok {
		t.Errorf("a FIFO at the parent's session file: the fork's settle did not return 4.5 s after its context ended (open(2) blocks)")
	}
}

func clipTo(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
