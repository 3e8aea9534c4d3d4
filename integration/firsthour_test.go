package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestReadmeHarnessAsPrinted: the README's Python harness ("A complete
// harness in Python", #!/usr/bin/env python3), started as printed —
// `harnessd run -m hello -m bye -- ./my-harness` from its directory, with
// the machine's PATH (python3 a pyenv shim under the daemon's HOME on the
// CI's machine) — ends its episode normally in sandbox isolation.
func TestReadmeHarnessAsPrinted(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		testbin.Missing(t, "python3 is not on PATH")
	}
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "A complete harness in Python:")
	_, rest, _ = strings.Cut(rest, "```python\n")
	code, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.HasPrefix(code, "#!/usr/bin/env python3\n") {
		t.Fatalf("README.md has no #!/usr/bin/env python3 harness block: %q", code)
	}
	if !strings.Contains(string(b), "harnessd run -m hello -m bye -- ./my-harness") {
		t.Fatal("README.md no longer prints `harnessd run -m hello -m bye -- ./my-harness`")
	}
	dir, err := os.MkdirTemp("", "readme-") // 0700, as mktemp -d makes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "my-harness"), []byte(code), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := newMarker()
	cmd := exec.Command(harnessdBin(t), "run", "--isolation", "sandbox", "-m", "hello", "-m", "bye", "--", "./my-harness")
	cmd.Dir = dir
	cmd.Env = cleanEnv(markerVar+"="+marker, "TMPDIR="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("harnessd run: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	obs := finalObservation(t, out.String(), errb.String())
	if !obs.Done || obs.Metadata.Response != "BYE" || obs.Metadata.ErrorType != "" {
		t.Fatalf("the README harness's episode: %+v\nstderr: %s", obs, errb.String())
	}
	if left := waitNoMarked(marker, goneTimeout); len(left) > 0 {
		t.Errorf("harnessd run left processes behind: %s", describe(left))
	}
}

// runObservation is what the tests read of the final observation `harnessd
// run` prints.
type runObservation struct {
	Done     bool `json:"done"`
	Metadata struct {
		Response  string `json:"response"`
		ErrorType string `json:"error_type"`
	} `json:"metadata"`
}

// finalObservation decodes the last JSON object of `harnessd run`'s stdout
// (its final observation; stderr is for the failure message).
func finalObservation(t *testing.T, stdout, stderr string) runObservation {
	t.Helper()
	text := strings.TrimSpace(stdout)
	if i := strings.LastIndex(text, "\n{"); i >= 0 {
		text = text[i+1:]
	}
	var obs runObservation
	if err := json.Unmarshal([]byte(text), &obs); err != nil {
		t.Fatalf("final observation: %v\n%s\nstderr: %s", err, stdout, stderr)
	}
	return obs
}
