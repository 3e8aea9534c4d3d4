package seccomp

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's syscall numbers on x86_64.
	x32Bit = 0x40000000
)

// archDenied are the denied syscalls only this architecture has.
var archDenied = []uintptr{unix.SYS_IOPL, unix.SYS_IOPERM}
