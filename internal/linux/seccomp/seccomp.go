// Package seccomp is the sandboxed harness's system call filter: a classic
// BPF deny-list (a foreign architecture, kernel controls, namespaces and
// mounts, io_uring, socket families beyond unix/inet/inet6/netlink) that a
// sandbox's init (process/sandbox) installs on the thread that forks the
// harness. docs/security.md lists what it denies and why. It installs the
// filter on the calling thread only and knows nothing of sandboxes.
package seccomp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in the harness: debugging other
// processes, loading kernel code or state, namespaces and mounts, handles
// that bypass path checks, the machine's own controls, the kernel log, and
// io_uring (a second system call interface that seccomp cannot see into,
// with a long record of privilege escalations; no agent needs it: libuv
// falls back to its thread pool). docs/security.md lists them with why.
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
	unix.SYS_FANOTIFY_INIT, unix.SYS_PIDFD_GETFD, unix.SYS_SYSLOG,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
}, archDenied...)

// allowedFamilies are the socket families the harness may open; any other
// socket(2) fails with EAFNOSUPPORT, as on a kernel built without it:
// AF_VSOCK (the hypervisor's side of a VM), AF_ALG, AF_PACKET, AF_KEY,
// AF_XDP, AF_BLUETOOTH, AF_TIPC, AF_RDS and the rest are kernel surface no
// agent uses. AF_NETLINK stays: libc and node list interfaces through it.
var allowedFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// cloneNamespaces are the clone flags that would make new namespaces.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian
)

// bpfAsm assembles a classic BPF program with forward jumps to labels.
type bpfAsm struct {
	prog   []unix.SockFilter
	labels map[string]int
	jumps  []bpfJump
}

type bpfJump struct {
	at     int
	jt, jf string // "" is the next instruction
}

func (a *bpfAsm) stmt(code uint16, k uint32) {
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) jump(code uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, bpfJump{at: len(a.prog), jt: jt, jf: jf})
	a.prog = append(a.prog, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) label(name string) { a.labels[name] = len(a.prog) }

func (a *bpfAsm) assemble() ([]unix.SockFilter, error) {
	off := func(from int, to string) (uint8, error) {
		if to == "" {
			return 0, nil
		}
		t, ok := a.labels[to]
		if !ok || t <= from || t-from-1 > 255 {
			return 0, fmt.Errorf("seccomp program: bad jump from %d to %q", from, to)
		}
		return uint8(t - from - 1), nil
	}
	for _, j := range a.jumps {
		var err error
		if a.prog[j.at].Jt, err = off(j.at, j.jt); err != nil {
			return nil, err
		}
		if a.prog[j.at].Jf, err = off(j.at, j.jf); err != nil {
			return nil, err
		}
	}
	return a.prog, nil
}

// Program builds the classic BPF filter: a foreign architecture (a
// 32-bit ABI on a 64-bit kernel, x32) gets EPERM for everything, each
// denied syscall EPERM, clone3 ENOSYS (so libc falls back to clone, whose
// flags a filter can see), clone with any namespace flag EPERM, and a
// socket of a family not allowed EAFNOSUPPORT.
func Program() ([]unix.SockFilter, error) {
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	a := &bpfAsm{labels: map[string]int{}}
	a.stmt(ld, offArch)
	a.jump(jeq, auditArch, "", "eperm")
	a.stmt(ld, offNr)
	if x32Bit != 0 {
		a.jump(jge, x32Bit, "eperm", "")
	}
	for _, nr := range deniedSyscalls {
		a.jump(jeq, uint32(nr), "eperm", "")
	}
	a.jump(jeq, uint32(unix.SYS_CLONE3), "enosys", "")
	a.jump(jeq, uint32(unix.SYS_CLONE), "clone", "")
	a.jump(jeq, uint32(unix.SYS_SOCKET), "socket", "")
	a.stmt(ret, unix.SECCOMP_RET_ALLOW)
	a.label("clone")
	a.stmt(ld, offArg0)
	a.jump(jset, cloneNamespaces, "eperm", "allow")
	a.label("socket")
	a.stmt(ld, offArg0)
	for _, f := range allowedFamilies {
		a.jump(jeq, f, "allow", "")
	}
	a.stmt(ret, errno(unix.EAFNOSUPPORT))
	a.label("allow")
	a.stmt(ret, unix.SECCOMP_RET_ALLOW)
	a.label("eperm")
	a.stmt(ret, errno(unix.EPERM))
	a.label("enosys")
	a.stmt(ret, errno(unix.ENOSYS))
	return a.assemble()
}

// Install loads the filter on the calling thread (no_new_privs must
// be set); the harness inherits it over execve.
func Install() error {
	prog, err := Program()
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("install seccomp filter: %w", err)
	}
	return nil
}
