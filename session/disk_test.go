package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/treecopy"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// testQuota is the small limits.disk of these tests: they write little.
const testQuota = 8 << 20

type attackOutcome struct {
	OK     bool   `json:"ok"`
	Errno  string `json:"errno"`
	Count  int64  `json:"count"`
	Detail string `json:"detail"`
}

// fillStep runs the fill attack on path (size bytes) and returns its
// outcome and the observation.
func fillStep(t *testing.T, s *session.Session, path string, size int64) (attackOutcome, *wire.Observation) {
	t.Helper()
	obs := step(t, s, fmt.Sprintf("attack fill %s %dK", path, size>>10))
	if obs.Done || obs.Metadata.Response == nil {
		t.Fatalf("the fill ended the episode: %+v", obs.Metadata)
	}
	var out attackOutcome
	if err := json.Unmarshal([]byte(*obs.Metadata.Response), &out); err != nil {
		t.Fatalf("fill outcome %q: %v", *obs.Metadata.Response, err)
	}
	return out, obs
}

// needQuota skips (fails under CI=true) where this host cannot mount a
// quota.
func needQuota(t *testing.T) {
	t.Helper()
	if err := quota.Probe(context.Background(), t.TempDir()); err != nil {
		testbin.Missing(t, "disk quota: %v", err)
	}
}

// onHost is the bytes of the host's file system that path holds.
func onHost(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func diskLimited(c *config.Config, size int64) {
	d := units.ByteSize(size)
	c.Limits.Disk = &d
}

// TestDiskQuotaStopsAFill: a harness writing twice limits.disk into its
// workspace gets ENOSPC short of the bound, the host holds no more than
// the bound for the episode, the observation names limits.disk, the
// episode goes on, and HOME and TMPDIR share the same bound; once the
// session closes no mount or loop device of it is left. In sandbox and
// process isolation alike.
func TestDiskQuotaStopsAFill(t *testing.T) {
	needQuota(t)
	for _, iso := range []string{config.IsolationSandbox, config.IsolationProcess} {
		t.Run(iso, func(t *testing.T) {
			var s *session.Session
			var root string
			edit := func(c *config.Config) { diskLimited(c, testQuota); root = c.Workspace.Root }
			if iso == config.IsolationSandbox {
				s = sandboxed(t, edit)
			} else {
				cfg := testConfig(t)
				cfg.Isolation = iso
				edit(cfg)
				s = newSession(t, cfg)
			}
			reset(t, s)
			ws := episodeDir(t, s, "workspace") // its host path (inside a sandbox: episode.SandboxWorkspace)
			epDir := filepath.Dir(ws)
			if ok, err := quota.Mounted(epDir); err != nil || !ok {
				t.Fatalf("the episode's directory %s is no mount point: %v", epDir, err)
			}
			out, obs := fillStep(t, s, "big", 2*testQuota)
			if out.OK || out.Errno != "ENOSPC" || out.Count >= testQuota {
				t.Fatalf("a fill of %d bytes under an %d-byte quota: %+v", 2*testQuota, testQuota, out)
			}
			if !slices.Contains(obs.Metadata.LimitsReached, wire.LimitDisk) {
				t.Fatalf("the observation does not name %s: limits_reached %v", wire.LimitDisk, obs.Metadata.LimitsReached)
			}
			var named bool
			for _, ev := range obs.Metadata.TurnEvents {
				if e, ok := ev.Data.(*wire.Error); ok && e.Recoverable && e.Extra["limit"] == wire.LimitDisk && strings.Contains(e.Message, "ENOSPC") {
					named = true
				}
			}
			if !named {
				t.Errorf("no recoverable error event names %s: %+v", wire.LimitDisk, obs.Metadata.TurnEvents)
			}
			if got := onHost(t, filepath.Join(ws, "big")); got >= testQuota {
				t.Errorf("the filled file holds %d bytes", got)
			}
			if got := onHost(t, epDir+".img"); got > testQuota {
				t.Errorf("the episode holds %d bytes of the host's disk, more than limits.disk %d", got, testQuota)
			}
			// The episode goes on: the next turn answers.
			if got := responseText(t, s, "reply still here"); got != "still here" {
				t.Fatalf("the turn after the fill: %q", got)
			}
			// HOME and TMPDIR count against the same bound.
			step(t, s, "attack write-file big x") // truncate the workspace's file: space again
			if obs := step(t, s, "reply freed"); len(obs.Metadata.LimitsReached) != 0 {
				t.Fatalf("limits_reached %v after the space was freed", obs.Metadata.LimitsReached)
			}
			home := strings.TrimPrefix(responseText(t, s, "env HOME"), "HOME=")
			tmp := strings.TrimPrefix(responseText(t, s, "env TMPDIR"), "TMPDIR=")
			if out, _ := fillStep(t, s, home+"/h", testQuota/2); !out.OK {
				t.Fatalf("half the quota into HOME: %+v", out)
			}
			if out, obs := fillStep(t, s, tmp+"/t", testQuota/2); out.OK || out.Errno != "ENOSPC" || !slices.Contains(obs.Metadata.LimitsReached, wire.LimitDisk) {
				t.Fatalf("the other half into TMPDIR: %+v (limits_reached %v)", out, obs.Metadata.LimitsReached)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			assertNoQuotaLeft(t, root)
		})
	}
}

// assertNoQuotaLeft fails when a mount or a loop device of root is left.
func assertNoQuotaLeft(t *testing.T, root string) {
	t.Helper()
	waitFor(t, "the loop devices of "+root+" to detach", func() bool {
		devs, err := quota.LoopDevicesOf(root)
		return err == nil && len(devs) == 0
	})
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), root) {
		t.Fatalf("mounts under %s remain:\n%s", root, b)
	}
}

// TestDiskQuotaOffLetsTheFillThrough is the positive control: with
// limits.disk: 0 the same fill writes past the bound onto the host.
func TestDiskQuotaOffLetsTheFillThrough(t *testing.T) {
	s := sandboxed(t, func(c *config.Config) { diskLimited(c, 0) })
	reset(t, s)
	ws := episodeDir(t, s, "workspace")
	if ok, _ := quota.Mounted(filepath.Dir(ws)); ok {
		t.Fatal("limits.disk: 0 still mounted a quota")
	}
	out, obs := fillStep(t, s, "big", 2*testQuota)
	if !out.OK || out.Count != 2*testQuota || len(obs.Metadata.LimitsReached) != 0 {
		t.Fatalf("an unbounded fill: %+v, limits_reached %v", out, obs.Metadata.LimitsReached)
	}
	if got := onHost(t, filepath.Join(ws, "big")); got < 2*testQuota {
		t.Fatalf("the host holds %d bytes of the fill", got)
	}
}

// TestDiskQuotaTemplateTooBig: a workspace template larger than the quota
// fails the reset with ENOSPC, naming limits.disk, and leaves nothing
// mounted.
func TestDiskQuotaTemplateTooBig(t *testing.T) {
	needQuota(t)
	tpl := t.TempDir()
	if err := os.WriteFile(filepath.Join(tpl, "blob"), make([]byte, 2*testQuota), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationProcess
	cfg.Workspace.Template = tpl
	diskLimited(cfg, testQuota)
	root := cfg.Workspace.Root
	s := newSession(t, cfg)
	_, err := s.Reset(context.Background(), session.ResetOptions{})
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a reset with a template over the quota: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNoQuotaLeft(t, root)
}

// TestDiskQuotaKeep: with workspace.keep the episode's files stay readable
// in its directory on the host once the session closes, and its quota is
// unmounted all the same.
func TestDiskQuotaKeep(t *testing.T) {
	needQuota(t)
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationProcess
	cfg.Workspace.Keep = true
	diskLimited(cfg, testQuota)
	root := cfg.Workspace.Root
	s := newSession(t, cfg)
	reset(t, s)
	ws := responseText(t, s, "pwd")
	if got := responseText(t, s, "write kept.txt hello;;say done"); !strings.Contains(got, "wrote") {
		t.Fatalf("write: %q", got)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNoQuotaLeft(t, root)
	if b, err := os.ReadFile(filepath.Join(ws, "kept.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("the kept workspace's file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Dir(ws) + ".img"); !os.IsNotExist(err) {
		t.Fatalf("the kept episode's image is still there: %v", err)
	}
}

// TestDiskQuotaKeepStaysWithinTheQuotaOnTheHost: a kept episode's copy
// on the host keeps holes and hard links. The red team's harness made a
// 2 GiB sparse file and 50 hard links to an 8 MiB file under a 64 MiB
// quota: the copy wrote each out in full, 2.4 GiB on a host disk without
// a quota. Here a 64 MiB sparse file and 20 links to 1 MiB under 8 MiB:
// the kept directory takes at most the quota, and its files are what the
// harness made (the sizes, the one inode, the data).
func TestDiskQuotaKeepStaysWithinTheQuotaOnTheHost(t *testing.T) {
	needQuota(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "harness.sh")
	script := `#!/bin/sh
echo '{"type":"ready"}'
while read -r line; do
  truncate -s 64M sparse.bin
  head -c 1048576 /dev/urandom > data.bin
  for i in $(seq 1 20); do ln data.bin link$i; done
  echo "{\"type\":\"turn_complete\",\"data\":{\"response\":\"$(pwd)\",\"done\":false}}"
done
`
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationProcess
	cfg.Harness.Command = []string{prog}
	cfg.Workspace.Keep = true
	diskLimited(cfg, testQuota)
	s := newSession(t, cfg)
	reset(t, s)
	ws := step(t, s, "make them").ResponseText()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	used, err := treecopy.Bytes(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the kept workspace takes %d KiB on the host", used>>10)
	if used > testQuota {
		t.Errorf("the kept workspace takes %d bytes on the host, more than the quota's %d", used, testQuota)
	}
	sparse, err := os.Stat(filepath.Join(ws, "sparse.bin"))
	if err != nil || sparse.Size() != 64<<20 {
		t.Fatalf("sparse.bin: %v, %v", sparse, err)
	}
	data, err := os.ReadFile(filepath.Join(ws, "data.bin"))
	if err != nil || len(data) != 1<<20 {
		t.Fatalf("data.bin: %d bytes, %v", len(data), err)
	}
	first, _ := os.Stat(filepath.Join(ws, "data.bin"))
	for i := 1; i <= 20; i++ {
		fi, err := os.Stat(filepath.Join(ws, fmt.Sprintf("link%d", i)))
		if err != nil || !os.SameFile(fi, first) {
			t.Fatalf("link%d is not data.bin's inode: %v", i, err)
		}
	}
}
