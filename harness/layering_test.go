package harness_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestAdaptersLinkOnlyTheContract: the adapter contract and every adapter
// and preset package depend on wire and process, never on the daemon's
// episode machinery (a line-protocol adapter used to link the whole daemon
// through package harness).
func TestAdaptersLinkOnlyTheContract(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		testbin.Missing(t, "the go command is not on PATH: %v", err)
	}
	const mod = "github.com/harnessd/harnessd/"
	forbidden := []string{"bridge", "gateway", "egress", "process/sandbox", "rubric", "tasks", "episode", "session", "server", "config"}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, mod+"harness/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkgs++
		for _, dep := range fields[1:] {
			rel, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			for _, f := range forbidden {
				if rel == f || strings.HasPrefix(rel, f+"/") {
					t.Errorf("%s depends on %s", strings.TrimPrefix(fields[0], mod), rel)
				}
			}
		}
	}
	if pkgs < 9 {
		t.Fatalf("go list found %d packages under harness/, want the contract, the adapters and the presets", pkgs)
	}
}
