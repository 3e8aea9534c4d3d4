package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/session"
)

var sandboxProbe = sync.OnceValue(func() sandbox.ProbeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sandbox.Probe(ctx, "")
})

// sandboxed returns a session in sandbox isolation, skipping (failing
// under CI=true) where sandboxes cannot be made.
func sandboxed(t *testing.T, edit func(*config.Config)) *session.Session {
	t.Helper()
	if r := sandboxProbe(); !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationSandbox
	if edit != nil {
		edit(cfg)
	}
	return newSession(t, cfg)
}

func responseText(t *testing.T, s *session.Session, msg string) string {
	t.Helper()
	obs := step(t, s, msg)
	if obs.Done || obs.Metadata.Response == nil {
		t.Fatalf("step %q ended the episode: %+v", msg, obs.Metadata)
	}
	return *obs.Metadata.Response
}

func TestSandboxedEpisodeReachesItsToolsThroughTheDoor(t *testing.T) {
	s := sandboxed(t, nil)
	obs := reset(t, s)
	if obs.Metadata.Isolation != config.IsolationSandbox {
		t.Fatalf("reset metadata isolation %q", obs.Metadata.Isolation)
	}
	if got := responseText(t, s, `tool add {"a":2,"b":3}`); got != "add -> 5" {
		t.Fatalf("tool call through the bridge's door: %q", got)
	}
	home := strings.TrimPrefix(responseText(t, s, "env HOME"), "HOME=")
	if got := responseText(t, s, "write "+home+"/note hello;;say written"); !strings.Contains(got, "wrote") {
		t.Fatalf("writing HOME: %q", got)
	}
	if b, err := os.ReadFile(episodeDir(t, s, "home") + "/note"); err != nil || string(b) != "hello" {
		t.Fatalf("the harness's HOME write is not in the episode's HOME on the host: %q, %v", b, err)
	}
	// The daemon's own process is not in the harness's PID namespace.
	if got := responseText(t, s, fmt.Sprintf("write /proc/%d/comm x;;say done", os.Getpid())); strings.Contains(got, "wrote") {
		t.Fatalf("the harness wrote into the daemon's /proc entry")
	}
}

// episodeDir is the host path of directory name ("workspace", "home",
// "tmp") of the session's current episode: the harness sees its fixed path
// inside the sandbox (episode.SandboxDir), the daemon this one. The
// harness writes a marker into its TMPDIR, and the episode directory
// holding it is the one (a standby's may be there beside it).
func episodeDir(t *testing.T, s *session.Session, name string) string {
	t.Helper()
	tmp := strings.TrimPrefix(responseText(t, s, "env TMPDIR"), "TMPDIR=")
	marker := fmt.Sprintf(".where-%d", time.Now().UnixNano())
	if got := responseText(t, s, "write "+tmp+"/"+marker+" here"); !strings.Contains(got, "wrote") {
		t.Fatalf("write a marker into TMPDIR %s: %q", tmp, got)
	}
	// ep-N, or disk-N for an episode on a (reused) quota file system.
	found, _ := filepath.Glob(filepath.Join(s.Config().WorkspaceRoot(), s.ID(), "*", "tmp", marker))
	if len(found) != 1 {
		t.Fatalf("session %s: the marker is in %d episode directories under %s", s.ID(), len(found), s.Config().WorkspaceRoot())
	}
	return filepath.Join(filepath.Dir(filepath.Dir(found[0])), name)
}

// TestSandboxedResetsGetFreshSandboxes: with sandbox.reuse off every
// episode gets a sandbox of its own, which ends with it.
func TestSandboxedResetsGetFreshSandboxes(t *testing.T) {
	s := sandboxed(t, func(c *config.Config) { off := false; c.Sandbox.Reuse = &off })
	reset(t, s)
	pwd1, ws1 := responseText(t, s, "pwd"), episodeDir(t, s, "workspace")
	init1 := initOf(t, s)
	if got := responseText(t, s, "write mine.txt x"); !strings.Contains(got, "wrote") {
		t.Fatalf("write: %q", got)
	}
	if _, err := os.Stat(ws1 + "/mine.txt"); err != nil {
		t.Fatalf("the first episode's file is not in its host workspace: %v", err)
	}
	reset(t, s)
	pwd2 := responseText(t, s, "pwd")
	init2 := initOf(t, s)
	if init1 == init2 || init1 == 0 {
		t.Fatalf("consecutive episodes share a sandbox: init %d, %d", init1, init2)
	}
	if got := responseText(t, s, "cat mine.txt"); strings.Contains(got, ": x") {
		t.Fatalf("the second episode sees the first's file: %q", got)
	}
	if pwd1 != episode.SandboxWorkspace || pwd2 != pwd1 {
		t.Fatalf("the episodes' working directories inside are %q and %q, want %q", pwd1, pwd2, episode.SandboxWorkspace)
	}
	// The previous episode's idle init and directories end in the
	// background, right after its tree has stopped.
	waitFor(t, "the first episode's sandbox init to end", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", init1))
		return err != nil
	})
	// Its files go (with a disk quota its directory may come back, emptied,
	// as a later episode's).
	waitFor(t, "the first episode's workspace to go", func() bool { _, err := os.Stat(ws1 + "/mine.txt"); return err != nil })
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", init2)); err == nil {
		t.Fatalf("the sandbox init %d outlived Close", init2)
	}
}

func TestSandboxHidesOtherSessionsAndTheDaemonsFiles(t *testing.T) {
	secret := t.TempDir() + "/token"
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	a := sandboxed(t, func(c *config.Config) { c.Workspace.Root = root })
	reset(t, a)
	homeA := episodeDir(t, a, "home") // its host path: inside, every episode's HOME is at the same path

	cfg := testConfig(t)
	cfg.Isolation = config.IsolationSandbox
	cfg.Workspace.Root = root
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	b, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t), Hide: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	reset(t, b)
	for _, target := range []string{homeA + "/pwned", "/etc/pwned", secret, root + "/pwned"} {
		// The host's /tmp (the test's directories) is not the sandbox's:
		// a path there the harness may create in its own private /tmp;
		// that none of them reached the host is checked below.
		private := strings.HasPrefix(target, "/tmp/")
		if got := responseText(t, b, "write "+target+" x;;say after"); strings.Contains(got, "wrote") && !private {
			t.Errorf("the harness wrote %s: %q", target, got)
		}
	}
	for _, p := range []string{homeA + "/pwned", "/etc/pwned", root + "/pwned"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created on the host", p)
		}
	}
	if v, _ := os.ReadFile(secret); string(v) != "s3cret" {
		t.Errorf("the hidden file changed: %q", v)
	}
}

func TestSandboxedWarmStandby(t *testing.T) {
	s := sandboxed(t, func(c *config.Config) { c.Warm = 1 })
	// Each reset takes the standby prepared after the previous one (or at
	// the session's start), waiting for its preparation if need be. Every
	// episode sees its workspace at the same path inside: its own is told
	// by the previous episode's file not being there.
	for i := 0; i < 3; i++ {
		obs := reset(t, s)
		if !obs.Metadata.Standby || obs.Metadata.Isolation != config.IsolationSandbox {
			t.Fatalf("reset %d: %+v", i, obs.Metadata)
		}
		if got := responseText(t, s, `tool add {"a":2,"b":3}`); got != "add -> 5" {
			t.Fatalf("a sandboxed standby's bridge door: %q", got)
		}
		if got := responseText(t, s, "cat mark"); strings.Contains(got, "episode") {
			t.Fatalf("reset %d: two episodes in one workspace: %q", i, got)
		}
		if got := responseText(t, s, fmt.Sprintf("write mark episode %d", i)); !strings.Contains(got, "wrote") {
			t.Fatalf("reset %d: write: %q", i, got)
		}
		if got := responseText(t, s, "cat mark"); !strings.Contains(got, fmt.Sprintf("episode %d", i)) {
			t.Fatalf("reset %d: the workspace's own file: %q", i, got)
		}
	}
}

// TestSandboxWithoutToolsListensOnNothing: an episode without tools (and
// without a model) has no door to serve, so nothing listens in its network
// namespace: /proc/net/tcp inside holds only its header line.
func TestSandboxWithoutToolsListensOnNothing(t *testing.T) {
	s := sandboxed(t, func(c *config.Config) { c.Tools, c.Hide = nil, nil })
	reset(t, s)
	host, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	header := len(strings.SplitAfter(string(host), "\n")[0])
	got := responseText(t, s, "attack read-file /proc/net/tcp")
	var r struct {
		OK    bool   `json:"ok"`
		Count int    `json:"count"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &r); err != nil || !r.OK {
		t.Fatalf("read /proc/net/tcp inside: %q (%v)", got, err)
	}
	if r.Count != header {
		t.Fatalf("/proc/net/tcp inside has %d bytes, the header alone %d: a socket is open in the sandbox's network namespace", r.Count, header)
	}
}

func TestSandboxedRecordSaysSandbox(t *testing.T) {
	dir := t.TempDir()
	s := sandboxed(t, func(c *config.Config) { c.RecordDir = dir })
	obs := reset(t, s)
	b, err := os.ReadFile(dir + "/" + obs.Metadata.EpisodeID + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Kind      string `json:"kind"`
		Isolation string `json:"isolation"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &rec); err != nil || rec.Kind != "reset" || rec.Isolation != config.IsolationSandbox {
		t.Fatalf("the record's reset line: %+v (%v)", rec, err)
	}
}

// TestSandboxedEpisodesSeeTheSamePaths: in sandbox isolation every
// episode's harness sees its directories at the same fixed paths, whatever
// session and episode it is (an agent that prints them into its prompt
// sends the same prompt in every session: a fork's token prefix needs it);
// what it writes there lands in its own episode's host directories; the
// host paths themselves reach nothing of the host.
func TestSandboxedEpisodesSeeTheSamePaths(t *testing.T) {
	ask := []string{"pwd", "env HOME", "env TMPDIR", "env HARNESSD_WORKSPACE", "env HARNESSD_MCP_CONFIG"}
	want := []string{episode.SandboxWorkspace, "HOME=" + episode.SandboxHome, "TMPDIR=" + episode.SandboxTmp,
		"HARNESSD_WORKSPACE=" + episode.SandboxWorkspace, "HARNESSD_MCP_CONFIG=" + episode.SandboxDir + "/"}
	var sessions []*session.Session
	for i := range 2 {
		s := sandboxed(t, nil)
		reset(t, s)
		for j, q := range ask {
			got := responseText(t, s, q)
			if got != want[j] && !(strings.HasSuffix(want[j], "/") && strings.HasPrefix(got, want[j])) {
				t.Errorf("session %d: %s inside the sandbox = %q, want %q", i, q, got, want[j])
			}
		}
		sessions = append(sessions, s)
	}
	a, b := sessions[0], sessions[1]
	if cfgA, cfgB := responseText(t, a, "env HARNESSD_MCP_CONFIG"), responseText(t, b, "env HARNESSD_MCP_CONFIG"); cfgA != cfgB {
		t.Errorf("the MCP config is at %q in one session and %q in the other", cfgA, cfgB)
	}
	for i, s := range sessions {
		text := fmt.Sprintf("from session %d", i)
		for _, w := range []string{"write notes " + text, "write " + episode.SandboxHome + "/notes " + text, "write " + episode.SandboxTmp + "/notes " + text} {
			if got := responseText(t, s, w); !strings.Contains(got, "wrote") {
				t.Fatalf("session %d: %s: %q", i, w, got)
			}
		}
	}
	for i, s := range sessions {
		for _, d := range []string{"workspace", "home", "tmp"} {
			p := filepath.Join(episodeDir(t, s, d), "notes")
			if b, err := os.ReadFile(p); err != nil || string(b) != fmt.Sprintf("from session %d", i) {
				t.Errorf("session %d's %s write on the host (%s): %q %v", i, d, p, b, err)
			}
		}
	}
	// The host path of a's HOME names nothing of the host inside its
	// sandbox (under /tmp, which is the sandbox's own, the harness may
	// create it there); the writes by the inside paths above are the
	// control, they landed in the host directories.
	hostHome := episodeDir(t, a, "home")
	responseText(t, a, "write "+hostHome+"/by-host-path x;;say after")
	if _, err := os.Stat(hostHome + "/by-host-path"); err == nil {
		t.Errorf("the harness reached its HOME by the host path %s", hostHome)
	}
}
