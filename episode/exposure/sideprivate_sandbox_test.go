package exposure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process/sandbox"
)

// TestSideProgramInAPrivateDirectoryRunsInsideASandbox: a side program (a
// command rubric's script, a tool server) in a 0700 directory the
// sandbox's ids cannot search runs inside a sandbox built from
// ForCommand, as the harness's own program there does (the brief's
// "programs in 0700 directories"). The control: the same sandbox without
// ForCommand's binds cannot reach it.
func TestSideProgramInAPrivateDirectoryRunsInsideASandbox(t *testing.T) {
	needSandbox(t)
	priv, err := os.MkdirTemp("/var/tmp", "side-private-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(priv)
	if err := os.Chmod(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(priv, "check.sh")
	mustWrite(t, prog, "#!/bin/sh\necho side-program-ran\n", 0o755)
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}}}}
	v := New(cfg, nil, true, nil)
	binds, covers := v.ForCommand([]string{prog})
	out := runInside(t, sandbox.Config{Name: "side-private", Hide: append(v.HiddenPaths(), covers...), Binds: binds}, prog+" 2>&1")
	if !strings.Contains(out, "side-program-ran") {
		t.Errorf("the side program in a 0700 directory did not run (binds %v, covers %v):\n%s", binds, covers, out)
	}
	out = runInside(t, sandbox.Config{Name: "side-private-control", Hide: v.HiddenPaths()}, prog+" 2>&1")
	if strings.Contains(out, "side-program-ran") {
		t.Fatalf("control: the program ran without ForCommand's binds; the test cannot see them:\n%s", out)
	}
}
