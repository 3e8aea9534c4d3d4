package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/linux/procfs"
	"github.com/harnessd/harnessd/internal/testbin"
)

// hybrid is this kind of host's mountinfo: v1 controllers beside a v2
// "unified" mount that offers none of them.
const hybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 /process_api /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate`

func TestLayoutHybrid(t *testing.T) {
	var mounts []procfs.Mount
	for _, line := range strings.Split(hybrid, "\n") {
		m, ok := procfs.ParseMountinfoLine(line)
		if !ok {
			t.Fatalf("line not parsed: %s", line)
		}
		mounts = append(mounts, m)
	}
	l := layoutOf(mounts)
	if l.V2.Point != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 mount = %+v", l.V2)
	}
	if l.V1["cpu"].Point != "/sys/fs/cgroup/cpu,cpuacct" || l.V1["cpuacct"].Point != "/sys/fs/cgroup/cpu,cpuacct" || l.V1["pids"].Point != "/sys/fs/cgroup/pids" {
		t.Errorf("v1 mounts = %+v", l.V1)
	}
	for _, not := range []string{"rw", "xattr", "name=systemd", "systemd"} {
		if _, ok := l.V1[not]; ok {
			t.Errorf("%q taken for a controller", not)
		}
	}
	// A mount whose root is a cgroup (a container's view) strips it.
	if d := l.V1["memory"].Dir("/process_api/x"); d != "/sys/fs/cgroup/memory/x" {
		t.Errorf("Dir under a rooted mount = %s", d)
	}
	if d := l.V2.Dir("/a/b"); d != "/sys/fs/cgroup/unified/a/b" {
		t.Errorf("Dir = %s", d)
	}
}

func TestLimitsControllers(t *testing.T) {
	if got := (Limits{MemoryBytes: 1, CPU: 0.5}).Controllers(); strings.Join(got, ",") != "memory,cpu" {
		t.Fatalf("Controllers = %v", got)
	}
	if (Limits{CPU: 0.001}).cpuQuota() != 1000 {
		t.Fatal("a tiny CPU quota is not raised to the kernel's 1 ms minimum")
	}
}

// TestOwnV2Directory makes, populates, kills and removes a directory below
// this process's own v2 cgroup, where the host lets it.
func TestOwnV2Directory(t *testing.T) {
	_, _, dir, err := OwnV2()
	if err != nil {
		testbin.Missing(t, "no cgroup v2 here: %v", err)
	}
	d := filepath.Join(dir, "harnessd-cgroups-test-"+strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.Mkdir(d, 0o755); err != nil {
		if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
			t.Fatalf("cannot make a v2 cgroup as root under CI: %v", err)
		}
		testbin.Missing(t, "cannot make a cgroup in %s: %v", dir, err)
	}
	if err := os.Mkdir(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if Populated(d) || len(ProcsBelow(d)) != 0 || !Empty(d) {
		t.Fatal("a new cgroup is populated")
	}
	if len(Children(d)) != 1 {
		t.Fatalf("Children = %v", Children(d))
	}
	if err := Remove(d, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", d, err)
	}
}
