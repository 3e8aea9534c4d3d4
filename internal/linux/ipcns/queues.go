package ipcns

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Queues is a view of the POSIX message queues of the IPC namespace it
// was opened in: an mqueue file system mounted nowhere (a detached mount,
// reachable only through its descriptor), kept open so that each Clear
// lists and removes without mounting. The zero value is not usable; use
// OpenQueues.
type Queues struct {
	root *os.File // the detached mount's root, close-on-exec
}

// OpenQueues mounts an mqueue file system of the calling thread's IPC
// namespace where no path reaches it (fsopen, fsmount: Linux 5.2 or
// later; it needs CAP_SYS_ADMIN over the namespace's user namespace, as
// a mount does).
func OpenQueues() (*Queues, error) {
	fsfd, err := unix.Fsopen("mqueue", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open an mqueue file system: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("make an mqueue file system: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("mount an mqueue file system: %w", err)
	}
	defer unix.Close(mfd)
	// The mount's descriptor is a path only: its root opened for reading
	// (which keeps the mount) lists it.
	dfd, err := unix.Openat(mfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the mqueue file system: %w", err)
	}
	return &Queues{root: os.NewFile(uintptr(dfd), "mqueue")}, nil
}

// Clear removes every POSIX message queue of the namespace and checks
// that none is left.
func (q *Queues) Clear() error {
	names, err := q.list()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := unix.Unlinkat(int(q.root.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove message queue %s: %w", name, err)
		}
	}
	if names, err = q.list(); err != nil {
		return err
	} else if len(names) > 0 {
		return fmt.Errorf("%d message queues are left after their removal", len(names))
	}
	return nil
}

// list names the queues, reading the root from its start each time.
func (q *Queues) list() ([]string, error) {
	if _, err := q.root.Seek(0, 0); err != nil {
		return nil, fmt.Errorf("list message queues: %w", err)
	}
	names, err := q.root.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list message queues: %w", err)
	}
	return names, nil
}

// Close unmounts the file system (it goes with its last descriptor).
func (q *Queues) Close() error { return q.root.Close() }
