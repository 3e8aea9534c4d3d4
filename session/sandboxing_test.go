package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
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
	if b, err := os.ReadFile(home + "/note"); err != nil || string(b) != "hello" {
		t.Fatalf("the harness's HOME write is not in the episode's HOME on the host: %q, %v", b, err)
	}
	// The daemon's own process is not in the harness's PID namespace.
	if got := responseText(t, s, fmt.Sprintf("write /proc/%d/comm x;;say done", os.Getpid())); strings.Contains(got, "wrote") {
		t.Fatalf("the harness wrote into the daemon's /proc entry")
	}
}

func TestSandboxedResetsGetFreshSandboxes(t *testing.T) {
	s := sandboxed(t, nil)
	reset(t, s)
	pwd1 := responseText(t, s, "pwd")
	init1 := s.State().HarnessPID
	if got := responseText(t, s, "write "+pwd1+"/mine.txt x"); !strings.Contains(got, "wrote") {
		t.Fatalf("write: %q", got)
	}
	reset(t, s)
	pwd2 := responseText(t, s, "pwd")
	init2 := s.State().HarnessPID
	if pwd1 == pwd2 || init1 == init2 || init1 == 0 {
		t.Fatalf("consecutive episodes share a sandbox: %q (init %d), %q (init %d)", pwd1, init1, pwd2, init2)
	}
	// The previous episode's idle init and directories end in the
	// background, right after its tree has stopped.
	waitFor(t, "the first episode's sandbox init to end", func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", init1))
		return err != nil
	})
	// Its files go (with a disk quota its directory may come back, emptied,
	// as a later episode's).
	waitFor(t, "the first episode's workspace to go", func() bool { _, err := os.Stat(pwd1 + "/mine.txt"); return err != nil })
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
	homeA := strings.TrimPrefix(responseText(t, a, "env HOME"), "HOME=")

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
		if got := responseText(t, b, "write "+target+" x;;say after"); strings.Contains(got, "wrote") {
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
	var last string
	// Each reset takes the standby prepared after the previous one (or at
	// the session's start), waiting for its preparation if need be.
	for i := 0; i < 3; i++ {
		obs := reset(t, s)
		if !obs.Metadata.Standby || obs.Metadata.Isolation != config.IsolationSandbox {
			t.Fatalf("reset %d: %+v", i, obs.Metadata)
		}
		if got := responseText(t, s, `tool add {"a":2,"b":3}`); got != "add -> 5" {
			t.Fatalf("a sandboxed standby's bridge door: %q", got)
		}
		pwd := responseText(t, s, "pwd")
		if pwd == last {
			t.Fatalf("two episodes in one workspace %s", pwd)
		}
		last = pwd
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
