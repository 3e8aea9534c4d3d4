package sandbox_test

import (
	"net"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/landlock"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

// TestSeccompClosesKernelDoors tries, from inside a sandbox with the
// filter, each kernel interface the filter closes; the positive control is
// the same attempt from a sandbox without the filter (same namespaces, ids
// and capabilities), where each must succeed, so the test cannot pass by
// the attempt being broken or the host lacking the feature.
func TestSeccompClosesKernelDoors(t *testing.T) {
	need(t)
	for _, c := range []struct {
		name  string
		mode  []string
		errno string
	}{
		{"io_uring_setup", []string{"iouring"}, "EPERM"},
		{"socket(AF_VSOCK)", []string{"socket", strconv.Itoa(unix.AF_VSOCK)}, "EAFNOSUPPORT"},
	} {
		cfg := baseConfig(t)
		control, _ := attempt(t, cfg, c.mode...)
		if !control.OK {
			testbin.Missing(t, "%s in a sandbox without seccomp failed (%s %s): the kernel lacks it", c.name, control.Errno, control.Error)
		}
		cfg.Seccomp = true
		if r, _ := attempt(t, cfg, c.mode...); r.OK || r.Errno != c.errno {
			t.Errorf("%s under seccomp: %+v, want %s", c.name, r, c.errno)
		}
	}
	// The other denied calls an unprivileged process can make where
	// nothing filters them: each is tried without the filter (the control)
	// and with it. A call this host refuses anyway (a sysctl, a missing
	// feature) is logged: the filter's answer for it is
	// TestProgramDecisions' (internal/linux/seccomp).
	controlled := 0
	for _, name := range []string{"add_key", "keyctl", "userfaultfd", "perf_event_open", "name_to_handle_at", "open_tree", "pidfd_getfd", "process_vm_readv", "fanotify_init"} {
		control, _ := attempt(t, baseConfig(t), "sys", name)
		cfg := baseConfig(t)
		cfg.Seccomp = true
		r, _ := attempt(t, cfg, "sys", name)
		if r.OK || r.Errno != "EPERM" {
			t.Errorf("%s under seccomp: %+v, want EPERM", name, r)
		}
		if !control.OK {
			t.Logf("%s: this host refuses it without the filter too (%s %s)", name, control.Errno, control.Error)
			continue
		}
		controlled++
	}
	t.Logf("%d denied calls succeed without the filter and fail with it", controlled)
	if controlled < 5 {
		t.Errorf("only %d of the denied calls succeed without the filter here: the controls do not show the filter at work", controlled)
	}
	// The families agents use stay open under the filter.
	cfg := baseConfig(t)
	cfg.Seccomp = true
	for _, fam := range []int{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6} {
		if r, _ := attempt(t, cfg, "socket", strconv.Itoa(fam)); !r.OK {
			t.Errorf("socket(%d) under seccomp: %+v", fam, r)
		}
	}
}

// TestHostUnixSocketsAreHidden makes a 0777 Unix socket in the host's /run
// (removed after): the host connects to it (the positive control), a
// sandbox does not — /run is hidden, as are the other host socket
// directories.
func TestHostUnixSocketsAreHidden(t *testing.T) {
	need(t)
	if fi, err := os.Stat("/run"); err != nil || !fi.IsDir() {
		testbin.Missing(t, "a host /run directory: %v", err)
	}
	path := "/run/harnessd-sandbox-test-" + strconv.Itoa(os.Getpid()) + ".sock"
	ln, err := net.Listen("unix", path)
	if err != nil {
		testbin.Missing(t, "a socket in /run (root): %v", err)
	}
	t.Cleanup(func() { ln.Close(); os.Remove(path) })
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("control: the host cannot connect to its own socket: %v", err)
	}
	c.Close()
	for _, p := range []string{path, "/var" + path} {
		for _, seccomp := range []bool{false, true} {
			cfg := baseConfig(t)
			cfg.Seccomp = seccomp
			if r, _ := attempt(t, cfg, "unixconnect", p); r.OK {
				t.Errorf("seccomp %v: the sandbox connected to the host socket %s", seccomp, p)
			}
		}
	}
	// A bind the daemon asks for still shows what it binds, under /run too.
	dir := hostDir(t)
	cfg := baseConfig(t)
	cfg.Binds = append(cfg.Binds, sandbox.Bind{Src: dir, Dst: "/run/harnessd-test-bind"})
	if r, _ := attempt(t, cfg, "statfs", "/run/harnessd-test-bind"); !r.OK {
		t.Fatalf("a bind under the hidden /run: %+v", r)
	}
}

// TestHostAbstractSocketsAreScoped listens on an abstract Unix socket on
// the host: a sandbox on the host's network (which shares the network
// namespace's abstract sockets) cannot connect to it where the kernel has
// Landlock scoping, while the host connects (the positive control) and the
// harness still reaches an abstract socket of its own.
func TestHostAbstractSocketsAreScoped(t *testing.T) {
	need(t)
	if landlock.ABI() < 6 {
		testbin.Missing(t, "Landlock scoping (ABI 6, Linux 6.12): this kernel's ABI is %d", landlock.ABI())
	}
	name := "harnessd-sandbox-test-" + strconv.Itoa(os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c, err := net.Dial("unix", "@"+name)
	if err != nil {
		t.Fatalf("control: the host cannot connect to its own abstract socket: %v", err)
	}
	c.Close()
	cfg := baseConfig(t)
	cfg.HostNetwork = true
	if r, _ := attempt(t, cfg, "unixconnect", "@"+name); r.OK || r.Errno != "EPERM" {
		t.Errorf("a sandbox on the host's network connected to the host's abstract socket: %+v, want EPERM", r)
	}
	if r, _ := attempt(t, cfg, "abstractself", name+"-own"); !r.OK {
		t.Errorf("the harness's own abstract socket: %+v", r)
	}
}
