package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestAdversaryKernelDoors: from inside a harness of the real daemon, the
// kernel's doors the sandbox closes — io_uring (asynchronous I/O past the
// syscall filter), AF_VSOCK sockets (the hypervisor's host), a host Unix
// socket the test makes world-connectable in /run, more ptys than devpts
// allows, and /dev/shm past its tmpfs size. Each attack is refused in
// sandbox isolation and gets through in process isolation (the control):
// the harness runs as the daemon's user on the host there.
func TestAdversaryKernelDoors(t *testing.T) {
	t.Parallel()
	sock := filepath.Join("/run", fmt.Sprintf("harnessd-adversary-%d.sock", os.Getpid()))
	ln, err := net.Listen("unix", sock)
	if err != nil {
		testbin.Missing(t, "cannot make a Unix socket in /run (%v): the host socket attack needs it", err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			d := advDaemon(t, iso, "")
			s := openSession(t, d, iso)
			shm := fmt.Sprintf("/dev/shm/harnessd-adversary-%d-%s", os.Getpid(), iso)
			if iso == isoProcess {
				t.Cleanup(func() { os.Remove(shm) })
			}
			check := func(r attackResult, errnos ...string) {
				t.Helper()
				if iso == isoSandbox {
					refused(t, r, errnos...)
				} else {
					succeeded(t, r)
				}
			}
			check(s.attack("io-uring"), "EPERM")
			check(s.attack("vsock"), "EAFNOSUPPORT")
			check(s.attack("connect-unix", sock), "ENOENT", "EACCES", "ECONNREFUSED")
			ptys := s.attack("open-ptys", "80")
			check(ptys, "ENOSPC", "EAGAIN")
			if iso == isoSandbox && (ptys.Count == 0 || ptys.Count > 64) {
				t.Errorf("the sandbox opened %d ptys, want some and at most its devpts max (64)", ptys.Count)
			}
			// limits.memory 256MiB bounds /dev/shm to 64MiB (a quarter); the
			// turn's observation names the bound it reached.
			obs := s.step("attack fill " + shm + " 96M")
			var fill attackResult
			if err := json.Unmarshal([]byte(responseOf(t, obs)), &fill); err != nil {
				t.Fatalf("not an attack result: %q", responseOf(t, obs))
			}
			t.Logf("attack fill %s 96M -> %s", shm, fill)
			check(fill, "ENOSPC")
			reached := fmt.Sprint(meta(t, obs)["limits_reached"])
			if iso == isoSandbox {
				if fill.Count > 64<<20 {
					t.Errorf("/dev/shm took %d bytes, over its 64 MiB bound", fill.Count)
				}
				if !strings.Contains(reached, "sandbox:/dev/shm") {
					t.Errorf("the observation's limits_reached is %s, want it to name sandbox:/dev/shm", reached)
				}
			}
			if got := s.say("reply still-here"); got != "still-here" {
				t.Errorf("after the attacks the episode answers %q", got)
			}
		})
	}
}
