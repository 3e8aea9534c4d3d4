package capability

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/testbin"
)

// inThrowawayThread runs f on a locked OS thread that ends with it (its
// capability sets are changed for good), and returns f's error.
func inThrowawayThread(f func() error) error {
	errs := make(chan error, 1)
	go testbin.OnThrowawayThread(func() { errs <- f() })
	return <-errs
}

// TestDropBoundingEmptiesTheBoundingSet: after DropBounding no capability
// up to the kernel's last is left in the thread's bounding set (the
// positive control: CAP_CHOWN is in it before, as root).
func TestDropBoundingEmptiesTheBoundingSet(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "root's full bounding set is needed to see it emptied")
	}
	err := inThrowawayThread(func() error {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_CHOWN, 0, 0, 0); err != nil || in != 1 {
			t.Errorf("before: CAP_CHOWN in the bounding set %d (%v), want 1", in, err)
		}
		if err := DropBounding(); err != nil {
			return err
		}
		for c := 0; c <= lastCap(); c++ {
			if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil || in != 0 {
				t.Errorf("after: capability %d in the bounding set %d (%v)", c, in, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lastCap() < unix.CAP_AUDIT_READ {
		t.Errorf("lastCap %d is below CAP_AUDIT_READ (%d), which every supported kernel has", lastCap(), unix.CAP_AUDIT_READ)
	}
}

// BenchmarkDropBounding: DropBounding repeated on one thread of its own
// (the first call empties the set; each later one drops every capability
// again, as a sandbox's harness start does on a fresh one).
func BenchmarkDropBounding(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	err := inThrowawayThread(func() error {
		for b.Loop() {
			if err := DropBounding(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
