package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/testbin"
)

// diskQuota is the limits.disk of these tests (small: they write little).
const diskQuota = 8 << 20

// needQuota skips (fails under CI=true) where this host cannot mount a
// quota (root, loop devices, mke2fs).
func needQuota(t testing.TB) {
	t.Helper()
	if err := quota.Probe(t.Context(), t.TempDir()); err != nil {
		testbin.Missing(t, "disk quota: %v", err)
	}
}

// fill runs the fill attack in the workspace and returns its outcome and
// the observation's metadata.
func (s *advSession) fill(size int64) (attackResult, map[string]any) {
	s.t.Helper()
	obs := s.step(fmt.Sprintf("attack fill big %dK", size>>10))
	md := meta(s.t, obs)
	if md["error_type"] != nil {
		s.t.Fatalf("the fill ended the episode: %v %v", md["error_type"], md["error"])
	}
	var r attackResult
	if err := json.Unmarshal([]byte(responseOf(s.t, obs)), &r); err != nil {
		s.t.Fatalf("fill: not an attack result: %v", err)
	}
	s.t.Logf("fill %d -> %s (limits_reached %v)", size, r, md["limits_reached"])
	return r, md
}

// diskDaemon starts a daemon at isolation iso with the adversarial
// configuration and limits.disk: disk.
func diskDaemon(t testing.TB, iso string, disk int64) *daemon {
	t.Helper()
	needSandbox(t)
	limits := fmt.Sprintf("limits: {disk: %d}\n", disk)
	if iso == isoSandbox {
		limits = strings.Replace(advLimits, "}", fmt.Sprintf(", disk: %d}", disk), 1)
	}
	y := fmt.Sprintf("name: adversary\nharness:\n  command: [%q, agent]\n", testharnessBin(t)) + limits
	return startDaemon(t, spec{Flags: []string{"--isolation", iso, "--config", writeConfig(t, y)}})
}

// allocatedOnHost is the bytes of the host's disk path holds.
func allocatedOnHost(t testing.TB, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestAdversaryDiskFill: the red team's finding "1 GiB written to the
// workspace lands on the host's root file system", against the daemon at
// each isolation level with limits.disk: 8MiB. The fill stops with ENOSPC
// short of the bound, the host holds no more than the bound for the
// episode, the observation names limits.disk, and the episode goes on. The
// positive control: limits.disk: 0 lets the same fill through.
func TestAdversaryDiskFill(t *testing.T) {
	needQuota(t)
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			d := diskDaemon(t, iso, diskQuota)
			s := openSession(t, d, iso)
			ws, _ := s.hostWorkspace()
			r, md := s.fill(2 * diskQuota)
			if r.OK || r.Errno != "ENOSPC" || r.Count >= diskQuota {
				t.Fatalf("FINDING: a fill of %d bytes under limits.disk %d: %s", 2*diskQuota, diskQuota, r)
			}
			if lr, _ := md["limits_reached"].([]any); len(lr) != 1 || lr[0] != "limits.disk" {
				t.Errorf("limits_reached %v, want [limits.disk]", md["limits_reached"])
			}
			if got := allocatedOnHost(t, filepath.Dir(ws)+".img"); got > diskQuota {
				t.Errorf("FINDING: the episode holds %d bytes of the host's disk, over limits.disk %d", got, diskQuota)
			}
			if got := s.say("reply next"); got != "next" {
				t.Fatalf("the turn after the fill: %q", got)
			}

			ctl := diskDaemon(t, iso, 0)
			cs := openSession(t, ctl, iso)
			cws, _ := cs.hostWorkspace()
			r, md = cs.fill(2 * diskQuota)
			if !r.OK || r.Count != 2*diskQuota || md["limits_reached"] != nil {
				t.Fatalf("control: without the quota the fill should go through: %s", r)
			}
			if got := allocatedOnHost(t, filepath.Join(cws, "big")); got < 2*diskQuota {
				t.Fatalf("control: the host holds %d bytes of the fill", got)
			}
		})
	}
}

// TestDiskQuotaSweptAfterSIGKILL: a daemon killed with SIGKILL leaves its
// episodes' quota file systems mounted (the kernel unmounts nothing of
// the host's mount namespace); the next daemon to start over the same
// workspace root unmounts them with the session directory, and their loop
// devices detach. The default limits.disk applies (none is configured).
func TestDiskQuotaSweptAfterSIGKILL(t *testing.T) {
	needQuota(t)
	shared := t.TempDir()
	root := filepath.Join(shared, "harnessd")
	env := []string{"TMPDIR=" + shared}
	mountsUnder := func() []string {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], root+"/") {
				out = append(out, f[4])
			}
		}
		return out
	}
	for _, iso := range []string{isoSandbox, isoProcess} {
		killed := startDaemon(t, spec{Flags: []string{"--isolation", iso}, Harness: agentCmd(t), Env: env})
		if code, body := killed.DoRaw("POST", "/reset", "{}", nil); code != http.StatusOK {
			t.Fatalf("reset: HTTP %d %s", code, body)
		}
		// The reset's episode, and the spare prepared after it.
		deadline := time.Now().Add(30 * time.Second)
		for len(mountsUnder()) < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		left := mountsUnder()
		if len(left) < 2 {
			t.Fatalf("%s: the default limits.disk mounted %v, want the episode's and the spare's", iso, left)
		}
		killed.Signal(syscall.SIGKILL)
		killed.Wait()
		if got := mountsUnder(); len(got) != len(left) {
			t.Fatalf("%s: after SIGKILL the mounts are %v, were %v", iso, got, left)
		}
		next := startDaemon(t, spec{Flags: []string{"--isolation", iso}, Harness: agentCmd(t), Env: env})
		next.WaitLog("removed a session directory left by a daemon that is gone")
		if got := mountsUnder(); len(got) != 0 {
			t.Fatalf("%s: the next daemon left the killed one's quotas mounted: %v", iso, got)
		}
		deadline = time.Now().Add(30 * time.Second)
		for {
			devs, err := quota.LoopDevicesOf(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(devs) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: loop devices of the killed daemon still attached: %v", iso, devs)
			}
			time.Sleep(10 * time.Millisecond)
		}
		next.Stop()
		if got := mountsUnder(); len(got) != 0 {
			t.Fatalf("%s: a daemon stopped cleanly left mounts: %v", iso, got)
		}
	}
}
