package integration

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// nonRootUID is the uid the non-root daemon runs as (the deploy docs' pod
// user).
const nonRootUID = 10001

// TestSandboxedEpisodeOfANonRootDaemon: a daemon that is not root (the
// ordinary pod, docs/security.md "Not root, user namespaces allowed") plays
// a sandboxed episode with ids self. Every sandbox of such a daemon failed
// from 2cd7d4b on: the spawner was not dumpable, so a child forked into its
// new user namespace had root's /proc/PID/uid_map, which the spawner could
// not write (EACCES), and `check` said sandbox missing. The test runs the
// real binary as uid 10001 (it needs root to switch to it).
func TestSandboxedEpisodeOfANonRootDaemon(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testbin.Missing(t, "runs the daemon as uid 10001, which needs root to switch to")
	}
	for file, off := range map[string]string{"/proc/sys/kernel/unprivileged_userns_clone": "0", "/proc/sys/user/max_user_namespaces": "0"} {
		if b, err := os.ReadFile(file); err == nil && strings.TrimSpace(string(b)) == off {
			testbin.Missing(t, "this host forbids unprivileged user namespaces (%s is %s)", file, off)
		}
	}
	dir, err := os.MkdirTemp("", "nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := map[string]string{}
	for _, name := range []string{"harnessd", "testharness"} {
		bin[name] = filepath.Join(dir, name)
		copyExecutable(t, testbin.Path(t, name), bin[name])
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, nonRootUID, nonRootUID); err != nil {
		t.Fatal(err)
	}
	marker := newMarker()
	cmd := exec.Command(bin["harnessd"], "run", "--isolation", "sandbox", "-m", "reply hi from a non-root daemon", "--", bin["testharness"], "agent")
	cmd.Dir = home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, markerVar + "=" + marker}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nonRootUID, Gid: nonRootUID}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("harnessd run as uid %d: %v\nstdout: %s\nstderr: %s", nonRootUID, err, out.String(), errb.String())
	}
	obs := finalObservation(t, out.String(), errb.String())
	// --isolation sandbox refuses to start where no sandbox can be had, so
	// an answer is a sandboxed one.
	if obs.Metadata.Response != "hi from a non-root daemon" || obs.Metadata.ErrorType != "" {
		t.Fatalf("the non-root daemon's episode: %+v\nstderr: %s", obs.Metadata, errb.String())
	}
	if left := waitNoMarked(marker, goneTimeout); len(left) > 0 {
		t.Errorf("harnessd run left processes behind: %s", describe(left))
	}
}

// copyExecutable copies the program src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
