package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in the harness: debugging other
// processes, loading kernel code or state, namespaces and mounts, handles
// that bypass path checks, and the machine's own controls.
var deniedSyscalls = append([]uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
	unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_USERFAULTFD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_FANOTIFY_INIT, unix.SYS_PIDFD_GETFD,
}, archDenied...)

// cloneNamespaces are the clone flags that would make new namespaces.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// seccompProgram builds the classic BPF filter: a foreign architecture (a
// 32-bit ABI on a 64-bit kernel, x32) gets EPERM for everything, each
// denied syscall EPERM, clone3 ENOSYS (so libc falls back to clone, whose
// flags a filter can see) and clone with any namespace flag EPERM.
func seccompProgram() []unix.SockFilter {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)

	// The tail, from the end: [allow] [eperm] [enosys].
	var body []unix.SockFilter
	body = append(body, stmt(ld, offArch))
	body = append(body, jump(jeq, auditArch, 1, 0))
	body = append(body, stmt(ret, eperm))
	body = append(body, stmt(ld, offNr))
	if x32Bit != 0 {
		body = append(body, jump(jge, x32Bit, 0, 1))
		body = append(body, stmt(ret, eperm))
	}
	// Jumps below are to the three returns at the end; n counts the
	// instructions still to come before them.
	rules := len(deniedSyscalls) + 1 + 3 // denied, clone3, clone check (3)
	for i, nr := range deniedSyscalls {
		left := rules - i - 1 // instructions after this one before the returns
		body = append(body, jump(jeq, uint32(nr), uint8(left+1), 0))
	}
	// clone3 -> ENOSYS (the third return).
	body = append(body, jump(jeq, uint32(unix.SYS_CLONE3), 3+2, 0))
	// clone with a namespace flag -> EPERM.
	body = append(body, jump(jeq, uint32(unix.SYS_CLONE), 0, 2))
	body = append(body, stmt(ld, offArg0))
	body = append(body, jump(jset, cloneNamespaces, 1, 0))
	body = append(body, stmt(ret, allow))
	body = append(body, stmt(ret, eperm))
	body = append(body, stmt(ret, enosys))
	return body
}

// installSeccomp loads the filter on the calling thread (no_new_privs must
// be set); the harness inherits it over execve.
func installSeccomp() error {
	prog := seccompProgram()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	return nil
}
