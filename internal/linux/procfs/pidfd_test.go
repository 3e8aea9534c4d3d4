package procfs

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPidfdPidAsksThePidfd: PidfdPid (PIDFD_GET_INFO) gives a live
// child's pid, the same as its fdinfo says (the way on kernels without
// the ioctl, and the control); an ended and reaped child's pidfd and a
// descriptor that is no pidfd give errors.
func TestPidfdPidAsksThePidfd(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	got, err := PidfdPid(pidfd)
	if err != nil || got != cmd.Process.Pid {
		t.Errorf("PidfdPid of a live child: %d, %v; want %d", got, err, cmd.Process.Pid)
	}
	if info, err := pidfdInfoPid(pidfd); err != nil || info != cmd.Process.Pid {
		t.Errorf("control: the fdinfo says %d, %v; want %d", info, err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if pid, err := PidfdPid(pidfd); err == nil {
		t.Errorf("PidfdPid of a reaped child: %d, no error", pid)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pid, err := PidfdPid(int(f.Fd())); err == nil {
		t.Errorf("PidfdPid of %s: %d, no error", os.DevNull, pid)
	}
}

// BenchmarkPidfdPid: the host pid of a sandbox's harness, asked of its
// pidfd once per run (PIDFD_GET_INFO), against reading its fdinfo.
func BenchmarkPidfdPid(b *testing.B) {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(pidfd)
	for _, c := range []struct {
		name string
		pid  func(int) (int, error)
	}{{"ioctl", PidfdPid}, {"fdinfo", pidfdInfoPid}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if pid, err := c.pid(pidfd); err != nil || pid != os.Getpid() {
					b.Fatal(pid, err)
				}
			}
		})
	}
}
