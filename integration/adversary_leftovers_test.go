package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/quota"
)

// Leftovers of a sandboxed tree are found by the sandbox's PID namespace:
// every process of the daemon's tree in a PID namespace other than the
// test's is a sandbox's, and after close, reset, drain or SIGKILL no
// process of this machine may remain in one of those namespaces. /proc is
// only read; nothing found is killed (but the test's own daemon).

// pidNS is the PID namespace of pid ("" when it is gone).
func pidNS(pid int) string {
	s, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return s
}

// allPids lists the pids in /proc.
func allPids() []int {
	es, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range es {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// statusField returns the fields of a /proc/PID/status line.
func statusField(pid int, name string) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.Fields(v)
		}
	}
	return nil
}

// descendants lists the live processes below root.
func descendants(root int) []int {
	kids := map[int][]int{}
	for _, pid := range allPids() {
		if f := statusField(pid, "PPid"); len(f) == 1 {
			pp, _ := strconv.Atoi(f[0])
			kids[pp] = append(kids[pp], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range kids[p] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// sandboxNamespaces returns the PID namespaces of the daemon's tree other
// than the test's own: one per live sandbox.
func sandboxNamespaces(t testing.TB, d *daemon) map[string]bool {
	t.Helper()
	own := pidNS(os.Getpid())
	out := map[string]bool{}
	for _, pid := range descendants(d.Pid()) {
		if ns := pidNS(pid); ns != "" && ns != own {
			out[ns] = true
		}
	}
	return out
}

// inNamespaces lists the live processes of this machine in any of nss
// started at or before tick until (0: any).
func inNamespaces(nss map[string]bool, until uint64) []proc {
	var out []proc
	for _, pid := range allPids() {
		if nss[pidNS(pid)] {
			if p, ok := lookup(pid); ok && (until == 0 || p.Start <= until) {
				out = append(out, p)
			}
		}
	}
	return out
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's start
// time (100 on every Linux architecture this project builds for).
const clockTicks = 100

// bootTicks is the time since boot in clock ticks, as process start times
// count it.
func bootTicks(t testing.TB) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("/proc/uptime %q: %v", b, err)
	}
	return uint64(secs*clockTicks) + 1
}

// hostProcOf finds the host process of inner pid inner in one of nss.
func hostProcOf(t testing.TB, nss map[string]bool, inner int) proc {
	t.Helper()
	for _, pid := range allPids() {
		if !nss[pidNS(pid)] {
			continue
		}
		f := statusField(pid, "NSpid")
		if len(f) >= 2 && f[len(f)-1] == strconv.Itoa(inner) {
			if p, ok := lookup(pid); ok {
				return p
			}
		}
	}
	t.Fatalf("no process of the sandbox has inner pid %d", inner)
	return proc{}
}

// sandboxCgroupPrefix starts the name of every sandbox's cgroup.
const sandboxCgroupPrefix = "harnessd-sandbox-"

// sandboxCgroupDirs lists the cgroup directories (one per v1 controller
// hierarchy, or the v2 one) of pid that belong to a sandbox.
func sandboxCgroupDirs(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(filepath.Base(f[2]), sandboxCgroupPrefix) {
			continue
		}
		mount := "/sys/fs/cgroup/unified"
		if f[1] != "" {
			mount = filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(f[1], "name="))
		}
		if d := filepath.Join(mount, f[2]); isDir(d) {
			out = append(out, d)
		}
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// waitNoneIn waits until no process started by tick until is left in
// nss; it fails otherwise. (A namespace's inode number is reused once it
// is freed: a reset's new sandbox can have the old one's, so processes
// started after until are not the old tree's.)
func waitNoneIn(t testing.TB, nss map[string]bool, until uint64, what string, keptInit bool) {
	t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		left := inNamespaces(nss, until)
		if keptInit {
			left = slices.DeleteFunc(left, func(p proc) bool { return innerPid(p.Pid) == 1 })
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("FINDING: after %s, processes of the sandbox are left: %s", what, describe(left))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// innerPid is pid's pid in its own PID namespace (the last NSpid), 0 when
// unknown.
func innerPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "NSpid:" {
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// waitNoPath waits until path is gone (a released cgroup).
func waitNoPath(t testing.TB, path, what string) {
	t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("after %s the sandbox's cgroup %s is still there", what, path)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAdversaryNothingOutlivesTheEpisode: the harness starts a setsid,
// double-forked, empty-environment, SIGTERM-ignoring sleeper (and a plain
// background child), then the episode ends by close, reset, drain
// (SIGTERM of the daemon) or SIGKILL of the daemon: no process of the
// sandbox's PID namespace is left, the sleeper included; after a reset,
// none but the namespace's init, which the session keeps for a later
// episode (sandbox.reuse), recycled.
func TestAdversaryNothingOutlivesTheEpisode(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"close", "reset", "drain", "sigkill"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			d := advDaemon(t, isoSandbox, "")
			s := openSession(t, d, isoSandbox)
			if r := s.attack("join-cgroup"); r.OK {
				t.Errorf("FINDING: the harness joined %d cgroups: %s", r.Count, r)
			}
			esc := s.attack("escape")
			if !esc.OK || esc.Pid <= 0 {
				t.Fatalf("the escape did not start its sleeper: %s", esc)
			}
			s.say("spawn ignore-term")
			// The daemon also holds the next episode's spare sandbox: the
			// episode's own is its harness's (the init state reports).
			all := sandboxNamespaces(t, d)
			nss := map[string]bool{pidNS(s.harnessPid()): true}
			for ns := range nss {
				if !all[ns] {
					t.Fatalf("the episode's PID namespace %s is not among the daemon's sandboxes %v", ns, all)
				}
			}
			sleeper := hostProcOf(t, nss, esc.Pid)
			cgroups := sandboxCgroupDirs(sleeper.Pid)
			if len(cgroups) == 0 {
				t.Errorf("the sleeper is in no cgroup of its sandbox (limits are set): %s", sleeper)
			}
			if uid := statusField(sleeper.Pid, "Uid"); len(uid) == 0 {
				t.Errorf("no Uid line for the sleeper %s", sleeper)
			} else if n, _ := strconv.ParseUint(uid[0], 10, 64); n < 1<<30 {
				t.Errorf("the sleeper runs as host uid %d, want the sandbox range (>= 2^30)", n)
			}
			before := inNamespaces(nss, 0)
			if len(before) < 4 {
				t.Fatalf("want the init, the harness, the sleeper and the child in the sandbox, found %s", describe(before))
			}
			until := bootTicks(t)
			switch how {
			case "close":
				s.w.send(map[string]any{"type": "close"})
				s.w.expectClose()
				d.WaitSessions(0)
			case "reset":
				s.reset(isoSandbox)
				if got := s.say("reply again"); got != "again" {
					t.Errorf("the new episode answers %q", got)
				}
			case "drain":
				if code := d.Stop(); code != 0 {
					t.Errorf("drain: exit code %d", code)
				}
			case "sigkill":
				d.Signal(syscall.SIGKILL)
				d.Wait()
			}
			// A reset hands the sandbox on to a later episode of the
			// session (sandbox.reuse): its init may stay, recycled, and
			// nothing else of it.
			waitNoneIn(t, nss, until, how, how == "reset")
			for _, p := range before {
				if p.alive() && !(how == "reset" && innerPid(p.Pid) == 1) {
					t.Errorf("FINDING: %s of the sandbox survived %s", p, how)
				}
			}
			if sleeper.alive() {
				t.Errorf("FINDING: the escaped sleeper %s survived %s", sleeper, how)
			}
			if how == "reset" || how == "close" {
				if code, _ := d.Do(http.MethodGet, "/health", "", nil); code != http.StatusOK {
					t.Errorf("/health after %s: HTTP %d", how, code)
				}
			}
			if how == "sigkill" {
				// The sandbox's cgroup and workspaces outlive a SIGKILLed
				// daemon (nothing runs to remove them): say what is left.
				if es, _ := filepath.Glob(filepath.Join(d.Dir, "*")); len(es) > 0 {
					t.Logf("left in the daemon's directory after SIGKILL: %v", es)
				}
				// So are its episodes' disk quotas: unmount them as the
				// next daemon's sweep would (TestDiskQuotaSweptAfterSIGKILL).
				if ms, err := quota.UnmountBelow(d.Dir); len(ms) > 0 || err != nil {
					t.Logf("left after SIGKILL: the episodes' quota mounts %v (unmounted by the test: %v)", ms, err)
				}
				// Remove the empty cgroups the killed daemon left (rmdir
				// fails on a cgroup that still has a task).
				for _, cg := range cgroups {
					if isDir(cg) {
						t.Logf("left after SIGKILL: the sandbox's cgroup %s (removed by the test)", cg)
						// Its last tasks may still be exiting (EBUSY).
						var err error
						for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
							if err = os.Remove(cg); err == nil || time.Now().After(deadline) {
								break
							}
						}
						if err != nil {
							t.Errorf("remove the killed daemon's cgroup %s: %v", cg, err)
						}
					}
				}
				return
			}
			if how == "reset" {
				// A kept sandbox keeps its cgroup, which holds nothing of
				// the episode: only the init is left in its namespace.
				return
			}
			for _, cg := range cgroups {
				waitNoPath(t, cg, how)
			}
		})
	}
}
