package ipcns

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestClearEmptiesTheNamespace makes one object of each kind in an IPC
// namespace of the test's own, sees them listed (the positive control)
// and clears them: none is left.
func TestClearEmptiesTheNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "IPC and mount namespaces of the test's own need root")
	}
	dir := t.TempDir()
	errs := make(chan error, 1)
	go testbin.OnThrowawayThread(func() {
		errs <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWIPC | unix.CLONE_NEWNS); err != nil {
				return err
			}
			if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
				return err
			}
			for _, k := range sysv {
				if n, err := k.count(); err != nil || n != 0 {
					t.Errorf("%s: a new namespace counts %d (%v), want 0", k.table, n, err)
				}
			}
			if err := makeOneOfEach(); err != nil {
				return err
			}
			for _, k := range sysv {
				if ids, err := listIDs(k.table); err != nil || len(ids) != 1 {
					t.Errorf("%s lists %v (%v) before the clear, want one object", k.table, ids, err)
				}
				if n, err := k.count(); err != nil || n != 1 {
					t.Errorf("%s: counted %d (%v) before the clear, want 1", k.table, n, err)
				}
			}
			if n, err := countQueues(dir); err != nil || n != 1 {
				t.Errorf("%d message queues (%v) before the clear, want one", n, err)
			}
			if err := ClearSysV(); err != nil {
				return err
			}
			if err := ClearMessageQueues(dir); err != nil {
				return err
			}
			for _, k := range sysv {
				if ids, err := listIDs(k.table); err != nil || len(ids) != 0 {
					t.Errorf("%s lists %v (%v) after the clear", k.table, ids, err)
				}
				if n, err := k.count(); err != nil || n != 0 {
					t.Errorf("%s: counted %d (%v) after the clear", k.table, n, err)
				}
			}
			if n, err := countQueues(dir); err != nil || n != 0 {
				t.Errorf("%d message queues (%v) after the clear", n, err)
			}
			return nil
		}()
	})
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// makeOneOfEach makes a shared memory segment, a semaphore set, a System
// V message queue and a POSIX message queue.
func makeOneOfEach() error {
	if _, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, unix.IPC_CREAT|0o600); e != 0 {
		return e
	}
	if _, _, e := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0); e != 0 {
		return e
	}
	name, _ := unix.BytePtrFromString("left-behind")
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_CREAT|unix.O_RDWR, 0o600, 0, 0, 0)
	if e != 0 {
		return e
	}
	return unix.Close(int(fd))
}

// countQueues counts the POSIX message queues through mqueue at dir.
func countQueues(dir string) (int, error) {
	if err := unix.Mount("mqueue", dir, "mqueue", 0, ""); err != nil {
		return 0, err
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	ents, err := os.ReadDir(dir)
	return len(ents), err
}

// BenchmarkClearSysVEmpty: clearing a namespace with no System V object
// (a recycled sandbox's usual case).
func BenchmarkClearSysVEmpty(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("an IPC namespace of the benchmark's own needs root")
	}
	inNamespaces(b, func() error {
		for b.Loop() {
			if err := ClearSysV(); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestQueuesClearsWithoutAMount: a Queues opened in a namespace of the
// test's own sees a POSIX queue made after it opened (the positive
// control), clears it and is reused: a second queue made later is seen
// and cleared too, and no mount is added to the mount table.
func TestQueuesClearsWithoutAMount(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "IPC and mount namespaces of the test's own need root")
	}
	errs := make(chan error, 1)
	go testbin.OnThrowawayThread(func() {
		errs <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWIPC | unix.CLONE_NEWNS); err != nil {
				return err
			}
			before, err := os.ReadFile("/proc/thread-self/mountinfo")
			if err != nil {
				return err
			}
			q, err := OpenQueues()
			if err != nil {
				return err
			}
			defer q.Close()
			for round := range 2 {
				if err := makePOSIXQueue(fmt.Sprintf("left-%d", round)); err != nil {
					return err
				}
				if names, err := q.list(); err != nil || len(names) != 1 {
					t.Errorf("round %d: listed %v (%v) before the clear, want one queue", round, names, err)
				}
				if err := q.Clear(); err != nil {
					return err
				}
				if names, err := q.list(); err != nil || len(names) != 0 {
					t.Errorf("round %d: listed %v (%v) after the clear", round, names, err)
				}
			}
			after, err := os.ReadFile("/proc/thread-self/mountinfo")
			if err != nil {
				return err
			}
			if string(after) != string(before) {
				t.Errorf("the mount table changed:\n%s\nthen\n%s", before, after)
			}
			return nil
		}()
	})
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// makePOSIXQueue makes a POSIX message queue called name.
func makePOSIXQueue(name string) error {
	p, _ := unix.BytePtrFromString(name)
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), unix.O_CREAT|unix.O_RDWR, 0o600, 0, 0, 0)
	if e != 0 {
		return e
	}
	return unix.Close(int(fd))
}

// BenchmarkClearMessageQueues: clearing a namespace with no POSIX queue,
// by mounting mqueue for the moment (ClearMessageQueues) and through a
// Queues kept open. Each sub-benchmark unshares its own namespaces: b.Run
// runs one on a goroutine of its own, which a namespace its parent's
// thread unshared does not reach (it cleared the host's queues).
func BenchmarkClearMessageQueues(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("namespaces of the benchmark's own need root")
	}
	dir := b.TempDir()
	b.Run("mount", func(b *testing.B) {
		inNamespaces(b, func() error {
			for b.Loop() {
				if err := ClearMessageQueues(dir); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("kept", func(b *testing.B) {
		inNamespaces(b, func() error {
			q, err := OpenQueues()
			if err != nil {
				return err
			}
			defer q.Close()
			for b.Loop() {
				if err := q.Clear(); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// inNamespaces runs f on a thread of its own in IPC and mount namespaces
// of its own (mounts private), thrown away after; it fails b with f's
// error.
func inNamespaces(b *testing.B, f func() error) {
	var err error
	testbin.OnThrowawayThread(func() {
		if err = unix.Unshare(unix.CLONE_NEWIPC | unix.CLONE_NEWNS); err != nil {
			return
		}
		if err = unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
			return
		}
		err = f()
	})
	if err != nil {
		b.Fatal(err)
	}
}
