package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/internal/testbin"
)

// TestCheckProbesAHarness: `harnessd check -- CMD` starts the harness in a
// probe sandbox. A harness whose script reads a file under the daemon's
// HOME (hidden in every sandbox) does not start, and the report names that
// file and the knob; given the file with --sandbox-ro it starts (the
// positive control), as a harness needing nothing hidden does.
func TestCheckProbesAHarness(t *testing.T) {
	home := t.TempDir() // the daemon's HOME for this run: hidden inside
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, "harness.conf")
	if err := os.WriteFile(secret, []byte("ready\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "harness.sh")
	script := "#!/bin/sh\nread -r word < " + secret + " || exit 3\necho '{\"type\":\"'$word'\"}'\ncat >/dev/null\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home}
	out, errOut, code := harnessd(t, env, "check", "--startup-timeout", "10s", "--", prog)
	if code == exitMissing {
		testbin.Missing(t, "%s", strings.TrimSpace(out))
	}
	if code != exitFailure || !strings.Contains(out, "did not start in the sandbox") || !strings.Contains(out, secret) ||
		!strings.Contains(out, "sandbox.read_only") {
		t.Fatalf("probe of a harness that needs a hidden file: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = harnessd(t, env, "check", "--startup-timeout", "10s", "--sandbox-ro", secret, "--", prog)
	if code != exitOK || !strings.Contains(out, "started in the sandbox and ready") || !strings.Contains(out, secret) {
		t.Fatalf("probe with the file given: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestCheckEscapesTheProbedProgramsOutput: a probed harness that fails
// with escape sequences and a forged line on its stderr reaches the
// operator's terminal as visible escapes, its lines marked as the tail's
// (they were printed as they came). The control: the program's own
// stderr holds the raw escape.
func TestCheckEscapesTheProbedProgramsOutput(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "harness.sh")
	script := "#!/bin/sh\nprintf 'oops\\033]52;c;Zm9v\\007\\nstarted in the sandbox and ready\\n' >&2\nexit 3\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if raw, _ := exec.Command(prog).CombinedOutput(); !strings.Contains(string(raw), "\x1b]52;") {
		t.Fatalf("control: the program's stderr %q", raw)
	}
	out, errOut, code := harnessd(t, nil, "check", "--startup-timeout", "10s", "--", prog)
	if code == exitMissing {
		testbin.Missing(t, "%s", strings.TrimSpace(out))
	}
	if code != exitFailure || strings.ContainsRune(out, 0x1b) || !strings.Contains(out, `oops\x1b]52;c;Zm9v\x07`) ||
		strings.Contains(out, "\nstarted in the sandbox and ready") {
		t.Fatalf("probe of a harness writing escapes: exit %d\n%q\n%s", code, out, errOut)
	}
}

// TestCheckRunsARelativeProgramFromTheCallersDirectory: `harnessd check --
// ./my-harness`, as the README writes it, probes the file in the
// directory check runs in (as run and serve do), not one inside the
// probe's workspace, where it is "not found in the sandbox". The probe
// leaves nothing mounted (its episode's disk was left mounted, a loop
// device a probe, in every test run).
func TestCheckRunsARelativeProgramFromTheCallersDirectory(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho '{\"type\":\"ready\"}'\ncat >/dev/null\n"
	if err := os.WriteFile(filepath.Join(dir, "my-harness"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir() // the probe's TMPDIR, where its episode's disk is mounted
	cmd := exec.Command(testbin.Path(t, "harnessd"), "check", "--startup-timeout", "10s", "--", "./my-harness")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "TMPDIR="+tmp)
	t.Cleanup(func() { quota.UnmountBelow(tmp) })
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == exitMissing {
		testbin.Missing(t, "%s", strings.TrimSpace(out.String()))
	}
	if err != nil || !strings.Contains(out.String(), "started in the sandbox and ready") {
		t.Fatalf("check -- ./my-harness in its directory: %v\n%s", err, out.String())
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], tmp+"/") {
			t.Errorf("the probe left %s mounted on %s", f[0], f[1])
		}
	}
}

// TestCheckFindsTheSandboxFromAPrivateDirectory: harnessd under a
// directory the sandbox's ids may not search (a clone under a 0700 HOME)
// runs its episodes' sandboxes with the embedded init, placed where they
// can reach it; check probes the sandbox the same way, so it reports it
// verified and the isolation sandbox, not a sandbox missing for a cause
// (user namespaces) that is not the one.
func TestCheckFindsTheSandboxFromAPrivateDirectory(t *testing.T) {
	priv := t.TempDir()
	if err := os.Chmod(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(priv, "harnessd")
	src, err := os.ReadFile(testbin.Path(t, "harnessd"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check", "--json")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Run() // exit 1 when an optional item is missing
	var rep struct {
		Isolation string `json:"isolation"`
		Checks    map[string]struct {
			Status string `json:"status"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	sb := rep.Checks["sandbox"]
	if sb.Status == "missing" && strings.Contains(sb.Detail, "user namespaces") && rep.Checks["userns"].Status != "verified" {
		testbin.Missing(t, "no sandbox on this machine: %s", sb.Detail)
	}
	if sb.Status != "verified" || rep.Isolation != "sandbox" {
		t.Fatalf("check from %s: sandbox %+v, isolation %q", priv, sb, rep.Isolation)
	}
}
