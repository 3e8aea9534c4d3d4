package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/internal/linux/cgroups"
	"github.com/harnessd/harnessd/internal/testbin"
)

func TestSweepCgroupsRemovesOnlyDeadDaemonsEmptyCgroups(t *testing.T) {
	layout, err := cgroups.Find()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := layout.V1["pids"]
	dir := ""
	if ok {
		dir = m.Dir(cgroups.Own()["pids"])
	} else if layout.V2.Point != "" {
		dir = layout.V2.Dir(cgroups.Own()[""])
	}
	if dir == "" || os.Getuid() != 0 {
		testbin.Missing(t, "a writable cgroup hierarchy (root)")
	}
	// A pid that was alive a moment ago and is not now.
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead := c.Process.Pid
	gone := filepath.Join(dir, fmt.Sprintf("%s%d-episode-test%d", cgroupPrefix, dead, os.Getpid()))
	kept := filepath.Join(dir, fmt.Sprintf("%s%d-episode-test%d", cgroupPrefix, os.Getpid(), os.Getpid()))
	for _, d := range []string{gone, kept} {
		if err := os.Mkdir(d, 0o755); err != nil {
			testbin.Missing(t, "a writable cgroup hierarchy: %v", err)
		}
	}
	defer os.Remove(kept)
	defer os.Remove(gone)
	// A fresh one is kept, whatever its pid: a daemon in another PID
	// namespace cannot tell a live daemon's pid from a dead one's.
	SweepCgroups()
	if _, err := os.Stat(gone); err != nil {
		t.Errorf("an empty sandbox cgroup made just now was removed: %v", err)
	}
	sweepCgroups(0) // as if it were older than sweepMinAge
	if _, err := os.Stat(gone); err == nil {
		t.Errorf("the dead daemon's empty sandbox cgroup %s was not removed", gone)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a live daemon's sandbox cgroup was removed: %v", err)
	}
}
