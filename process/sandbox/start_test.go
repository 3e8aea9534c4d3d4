package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/linux/cgroups"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

// leftCgroups lists the sandbox cgroups this process made for sandboxes
// named name, in every hierarchy a sandbox's limits may use.
func leftCgroups(t *testing.T, name string) []string {
	t.Helper()
	layout, err := cgroups.Find()
	if err != nil {
		t.Fatal(err)
	}
	own := cgroups.Own()
	parents := []string{}
	if layout.V2.Point != "" {
		parents = append(parents, layout.V2.Dir(own[""]))
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if m, ok := layout.V1[c]; ok {
			parents = append(parents, m.Dir(own[c]))
		}
	}
	prefix := fmt.Sprintf("harnessd-sandbox-%d-%s-", os.Getpid(), name)
	var left []string
	for _, p := range parents {
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				left = append(left, filepath.Join(p, e.Name()))
			}
		}
	}
	return left
}

// TestFailedStartUndoesItsPhases makes Start fail in its binds phase (as
// root: the daemon clones a missing source) and in its handshake (the init
// cannot bind a missing path), after the ids and cgroup phases succeeded:
// the cgroup is gone, the id range free again (a one-range pool serves the
// next sandbox), and the same config with the bind fixed starts (the
// positive control: the phases do make a cgroup that the failure undid).
func TestFailedStartUndoesItsPhases(t *testing.T) {
	need(t)
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the cgroup and id-range phases need root")
	}
	ranges, err := sandbox.NewRanges(sandbox.DefaultIDBase+(1<<28), 1)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		name string
		ids  sandbox.IDMode
	}{{"undo-binds", sandbox.IDRange}, {"undo-handshake", sandbox.IDSelf}} {
		cfg := baseConfig(t)
		cfg.Name, cfg.IDs, cfg.Ranges = c.name, c.ids, ranges
		cfg.Limits = sandbox.Limits{Pids: 64}
		cfg.Binds = append(cfg.Binds, sandbox.Bind{Src: missing, Dst: "/missing"})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sb, err := sandbox.Start(ctx, cfg)
		cancel()
		if err == nil {
			sb.Close()
			t.Fatalf("%s: a sandbox with a missing bind source started", c.name)
		}
		t.Logf("%s: %v", c.name, err)
		if left := leftCgroups(t, c.name); len(left) > 0 {
			t.Errorf("%s: cgroups left after a failed start: %v", c.name, left)
		}
	}
	// The one range is free again, and the phases do make a cgroup.
	cfg := baseConfig(t)
	cfg.Name, cfg.IDs, cfg.Ranges, cfg.Limits = "undo-control", sandbox.IDRange, ranges, sandbox.Limits{Pids: 64}
	rn := start(t, cfg, nil, "id")
	if r := rn.next(t); !r.OK {
		t.Fatalf("control: %+v", r)
	}
	if left := leftCgroups(t, "undo-control"); len(left) == 0 {
		t.Fatal("control: a started sandbox with limits has no cgroup of this test's naming")
	}
}
