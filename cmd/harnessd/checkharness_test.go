package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
