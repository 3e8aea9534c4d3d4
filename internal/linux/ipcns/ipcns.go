// Package ipcns empties the calling thread's IPC namespace: every System V
// shared memory segment, semaphore set and message queue, and every POSIX
// message queue. Such objects outlive the processes that made them, so a
// namespace kept for a later tenant must lose them first. It removes and
// verifies; it knows nothing of sandboxes or of who is the next tenant.
package ipcns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysv names each System V object kind's /proc/sysvipc table, how many
// the namespace has and how one is removed (IPC_RMID; needs CAP_IPC_OWNER
// over the namespace unless the caller owns the object).
var sysv = []struct {
	table  string
	count  func() (int, error)
	remove func(id int) error
}{
	{"/proc/sysvipc/shm", countShm, func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err }},
	{"/proc/sysvipc/sem", countSem, func(id int) error { return ctl(unix.SYS_SEMCTL, id, 0, unix.IPC_RMID) }},
	{"/proc/sysvipc/msg", countMsg, func(id int) error { return ctl(unix.SYS_MSGCTL, id, unix.IPC_RMID, 0) }},
}

func ctl(nr uintptr, id int, a, b uintptr) error {
	if _, _, e := unix.Syscall(nr, uintptr(id), a, b); e != 0 {
		return e
	}
	return nil
}

// The *_INFO commands of shmctl, semctl and msgctl (linux/shm.h, sem.h,
// msg.h; not in x/sys): each fills a summary of the calling thread's IPC
// namespace that includes how many objects of its kind exist (ids'
// in_use), with no permission needed.
const (
	msgInfo = 12 // MSG_INFO: struct msginfo, msgpool (int 0) = queues
	shmInfo = 14 // SHM_INFO: struct shm_info, used_ids (int 0) = segments
	semInfo = 19 // SEM_INFO: struct seminfo, semusz (int 7) = sets
)

// countShm returns how many shared memory segments the namespace has
// (those marked for removal but still attached included).
func countShm() (int, error) {
	var info [6]uint64 // struct shm_info: int used_ids (padded), 5 unsigned longs
	_, _, e := unix.Syscall(unix.SYS_SHMCTL, 0, shmInfo, uintptr(unsafe.Pointer(&info)))
	return int(*(*int32)(unsafe.Pointer(&info))), infoErr(e) // used_ids
}

// countSem returns how many semaphore sets the namespace has.
func countSem() (int, error) {
	var info [10]int32 // struct seminfo
	_, _, e := unix.Syscall6(unix.SYS_SEMCTL, 0, 0, semInfo, uintptr(unsafe.Pointer(&info)), 0, 0)
	return int(info[7]), infoErr(e)
}

// countMsg returns how many message queues the namespace has.
func countMsg() (int, error) {
	var info [8]int32 // struct msginfo: 7 ints and an unsigned short
	_, _, e := unix.Syscall(unix.SYS_MSGCTL, 0, msgInfo, uintptr(unsafe.Pointer(&info)))
	return int(info[0]), infoErr(e)
}

func infoErr(e unix.Errno) error {
	if e != 0 {
		return fmt.Errorf("count IPC objects: %w", e)
	}
	return nil
}

// ClearSysV removes every System V object of the namespace and checks
// that none is left. A shared memory segment still attached somewhere is
// only marked for removal and counts as left. The kinds the namespace has
// none of are known from one syscall each: /proc/sysvipc (a few tens of
// microseconds a table) is read only for a kind that has some.
func ClearSysV() error {
	for _, k := range sysv {
		n, err := k.count()
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		ids, err := listIDs(k.table)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := k.remove(id); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
				return fmt.Errorf("remove %s object %d: %w", filepath.Base(k.table), id, err)
			}
		}
		if n, err = k.count(); err != nil {
			return err
		} else if n > 0 {
			return fmt.Errorf("%d %s objects are left after their removal", n, filepath.Base(k.table))
		}
	}
	return nil
}

// listIDs reads the ids (second column) of a /proc/sysvipc table.
func listIDs(table string) ([]int, error) {
	f, err := os.Open(table)
	if err != nil {
		return nil, fmt.Errorf("list IPC objects: %w", err)
	}
	defer f.Close()
	var ids []int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for first := true; sc.Scan(); first = false {
		fields := strings.Fields(sc.Text())
		if first || len(fields) < 2 {
			continue // the header
		}
		id, err := strconv.Atoi(fields[1])
		if err != nil {
			return nil, fmt.Errorf("list IPC objects: %s: bad id %q", table, fields[1])
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list IPC objects: %w", err)
	}
	return ids, nil
}

// ClearMessageQueues removes every POSIX message queue of the namespace,
// through an mqueue file system mounted at dir for the purpose (an empty
// directory; it is unmounted again), and checks that none is left.
// Mounting needs CAP_SYS_ADMIN over the IPC namespace's user namespace.
func ClearMessageQueues(dir string) (err error) {
	if err := unix.Mount("mqueue", dir, "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount mqueue at %s: %w", dir, err)
	}
	defer func() {
		if uerr := unix.Unmount(dir, unix.MNT_DETACH); uerr != nil && err == nil {
			err = fmt.Errorf("unmount mqueue at %s: %w", dir, uerr)
		}
	}()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list message queues: %w", err)
	}
	for _, e := range ents {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove message queue %s: %w", e.Name(), err)
		}
	}
	if ents, err = os.ReadDir(dir); err != nil {
		return fmt.Errorf("list message queues: %w", err)
	} else if len(ents) > 0 {
		return fmt.Errorf("%d message queues are left after their removal", len(ents))
	}
	return nil
}
