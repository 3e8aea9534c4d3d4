package seccomp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter interprets the classic BPF subset seccompProgram emits (load
// word at absolute offset, jeq/jge/jset with a constant, return constant)
// on one struct seccomp_data, and returns the action.
func runFilter(t *testing.T, prog []unix.SockFilter, arch, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[offNr:], nr)
	binary.NativeEndian.PutUint32(data[offArch:], arch)
	binary.NativeEndian.PutUint64(data[16:], arg0)
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.NativeEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGE:
				ok = acc >= in.K
			default:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: code %#x not interpreted", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestProgramDecisions runs the filter on every denied syscall and
// on the ones that must stay allowed: the decisions the kernel tests
// (TestSeccompClosesKernelDoors and the others) cannot all reach on one
// host, such as syslog where dmesg_restrict already refuses it, or a
// foreign architecture's calls.
func TestProgramDecisions(t *testing.T) {
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	eperm := unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	for _, nr := range deniedSyscalls {
		if got := runFilter(t, prog, auditArch, uint32(nr), 0); got != eperm {
			t.Errorf("syscall %d: action %#x, want EPERM", nr, got)
		}
	}
	for _, nr := range []uintptr{unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER, unix.SYS_SYSLOG, unix.SYS_BPF, unix.SYS_UNSHARE} {
		if got := runFilter(t, prog, auditArch, uint32(nr), 0); got != eperm {
			t.Errorf("syscall %d not denied: %#x", nr, got)
		}
	}
	for _, nr := range []uintptr{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_EXECVE, unix.SYS_OPENAT, unix.SYS_WAIT4, unix.SYS_SECCOMP} {
		if got := runFilter(t, prog, auditArch, uint32(nr), 0); got != allow {
			t.Errorf("syscall %d: action %#x, want allow", nr, got)
		}
	}
	if got := runFilter(t, prog, auditArch^1, unix.SYS_READ, 0); got != eperm {
		t.Errorf("a foreign architecture's read: %#x, want EPERM", got)
	}
	if got := runFilter(t, prog, auditArch, uint32(unix.SYS_CLONE3), 0); got != unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS) {
		t.Errorf("clone3: %#x, want ENOSYS", got)
	}
	if got := runFilter(t, prog, auditArch, uint32(unix.SYS_CLONE), unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)); got != eperm {
		t.Errorf("clone(CLONE_NEWUSER): %#x, want EPERM", got)
	}
	if got := runFilter(t, prog, auditArch, uint32(unix.SYS_CLONE), unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND); got != allow {
		t.Errorf("clone of a thread: %#x, want allow", got)
	}
	for fam, want := range map[uint64]uint32{
		unix.AF_UNIX: allow, unix.AF_INET: allow, unix.AF_INET6: allow, unix.AF_NETLINK: allow,
		unix.AF_VSOCK: unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT), unix.AF_ALG: unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT),
		unix.AF_PACKET: unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT),
	} {
		if got := runFilter(t, prog, auditArch, uint32(unix.SYS_SOCKET), fam); got != want {
			t.Errorf("socket(%d): %#x, want %#x", fam, got, want)
		}
	}
}
