package sandbox_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/process/sandbox"
)

// TestTmpfsMountsAreBounded fills /tmp and /dev/shm past their configured
// bounds: each write stops with ENOSPC at the bound, while the same write
// into the workspace (the host's disk) goes through — the positive control
// that the agent can write that much at all. Without size= a tmpfs takes
// half the host's memory and both fills would succeed.
func TestTmpfsMountsAreBounded(t *testing.T) {
	need(t)
	ws := hostDir(t)
	cfg := baseConfig(t)
	cfg.Workspace = ws
	cfg.Storage = sandbox.Storage{TmpBytes: 8 << 20, ShmBytes: 4 << 20}
	if r, _ := attempt(t, cfg, "fill", filepath.Join(ws, "fill"), "16"); !r.OK || r.N != 16 {
		t.Fatalf("control: 16 MiB into the workspace: %+v", r)
	}
	for _, c := range []struct {
		path  string
		bound int
	}{{"/tmp/fill", 8}, {"/dev/shm/fill", 4}} {
		r, _ := attempt(t, cfg, "fill", c.path, "16")
		if r.OK || r.Errno != "ENOSPC" || r.N > c.bound {
			t.Errorf("16 MiB into %s (bound %d MiB): %+v, want ENOSPC after at most %d MiB", c.path, c.bound, r, c.bound)
		}
		if r, _ := attempt(t, cfg, "statfs", filepath.Dir(c.path)); r.N != c.bound {
			t.Errorf("statfs %s: %d MiB, want %d", filepath.Dir(c.path), r.N, c.bound)
		}
	}
	// The defaults: 1 GiB and 64 MiB, less with a small memory limit; the
	// root holds mount points only.
	for _, c := range []struct {
		mem       int64
		tmp, shm  int
		rootUnder int
	}{{0, 1024, 64, 8}, {128 << 20, 64, 32, 8}} {
		cfg := baseConfig(t)
		if c.mem > 0 {
			cfg.Limits.MemoryBytes = c.mem
		}
		for path, want := range map[string]int{"/tmp": c.tmp, "/dev/shm": c.shm} {
			if r, _ := attempt(t, cfg, "statfs", path); r.N != want {
				t.Errorf("memory limit %d: statfs %s = %d MiB, want %d", c.mem, path, r.N, want)
			}
		}
		if r, _ := attempt(t, cfg, "statfs", "/"); !r.OK || r.N > c.rootUnder {
			t.Errorf("statfs / = %+v, want at most %d MiB", r, c.rootUnder)
		}
	}
}

// ptyCount reads the host's count of allocated ptys.
func ptyCount(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pty/nr")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPTYsAreBounded opens more ptys than the sandbox's devpts allows and
// holds them: the opens past the bound fail with ENOSPC inside, and the
// host's pty count moves by the bound, not by the number asked for. The
// positive control opens as many in a sandbox with the default bound.
func TestPTYsAreBounded(t *testing.T) {
	need(t)
	const asked, bound = 40, 8
	cfg := baseConfig(t)
	cfg.Storage.PTYs = bound
	before := ptyCount(t)
	rn := start(t, cfg, nil, "ptys", strconv.Itoa(asked))
	r := rn.next(t)
	during := ptyCount(t)
	if r.OK || r.N != bound || r.Errno != "ENOSPC" {
		t.Errorf("%d ptys with max=%d: %+v, want %d then ENOSPC", asked, bound, r, bound)
	}
	// Other processes on the host may open ptys meanwhile: the count may
	// move by a little more than the bound, never by what was asked.
	if moved := during - before; moved >= asked {
		t.Errorf("the host's pty count moved by %d (%d -> %d) for a bound of %d", moved, before, during, bound)
	}
	rn.sb.Close()
	ctl := start(t, baseConfig(t), nil, "ptys", strconv.Itoa(asked))
	if r := ctl.next(t); !r.OK || r.N != asked {
		t.Fatalf("control: %d ptys with the default bound (%d): %+v", asked, sandbox.DefaultPTYs, r)
	}
}
