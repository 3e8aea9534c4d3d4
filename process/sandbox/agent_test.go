package sandbox_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// agentCommand makes the test binary a harness inside a sandbox: each mode
// is one attempt, and prints one JSON result line.
const agentCommand = "__sandbox-test-agent"

// agentPath is where the test binary is bound inside every test sandbox.
const agentPath = "/harnessd-test/agent"

// agentEnv is in the environment of every run of the test agent: under
// -race the agent is a race-instrumented binary, which sleeps GORACE's
// atexit_sleep_ms (a second by default) at each exit with status 0; that
// sleep was most of this package's time under make test (a second per
// run, 220 s in all).
var agentEnv = []string{"GORACE=atexit_sleep_ms=0"}

type result struct {
	OK    bool     `json:"ok"`
	Errno string   `json:"errno,omitempty"`
	Error string   `json:"error,omitempty"`
	Value string   `json:"value,omitempty"`
	List  []string `json:"list,omitempty"`
	N     int      `json:"n,omitempty"`
}

func errnoOf(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return unix.ErrnoName(en)
	}
	return ""
}

// deniedCall makes the system call name with harmless arguments: each
// succeeds for an unprivileged process on a host that allows it (the
// positive control without the filter) and touches only this process.
func deniedCall(name string) error {
	closeFd := func(fd int, err error) error {
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	switch name {
	case "add_key":
		_, err := unix.AddKey("user", "harnessd-sandbox-test", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
		return err
	case "keyctl":
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_PROCESS_KEYRING, true)
		return err
	case "userfaultfd":
		// UFFD_USER_MODE_ONLY (1): what an unprivileged process may ask for.
		fd, _, e := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|1, 0, 0)
		return closeFd(int(fd), errOf(e))
	case "perf_event_open":
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_TASK_CLOCK,
			Bits: unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv}
		attr.Size = uint32(unsafe.Sizeof(attr))
		return closeFd(unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC))
	case "name_to_handle_at":
		_, _, err := unix.NameToHandleAt(unix.AT_FDCWD, "/", 0)
		return err
	case "open_tree":
		// Without OPEN_TREE_CLONE: an O_PATH handle on the directory.
		return closeFd(unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLOEXEC))
	case "pidfd_getfd":
		pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
		if err != nil {
			return fmt.Errorf("pidfd_open: %w", err)
		}
		defer unix.Close(pidfd)
		return closeFd(unix.PidfdGetfd(pidfd, 1, 0))
	case "process_vm_readv":
		src, dst := []byte("harnessd"), make([]byte, 8)
		local := []unix.Iovec{{Base: &dst[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 8}}
		_, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0)
		return err
	case "fanotify_init":
		return closeFd(unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID, unix.O_RDONLY))
	}
	return fmt.Errorf("unknown call %q", name)
}

// errOf turns a raw syscall's errno into an error (nil for 0).
func errOf(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// autogroupName is the group's name in /proc/PID/autogroup
// ("/autogroup-42 nice 0" names "/autogroup-42").
func autogroupName(b []byte) string {
	name, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	return name
}

// targetPid is an attack's target: pid as given, or for "child" a
// /bin/sleep of the agent's own (the positive control), returned once it
// has executed (its /proc/PID/comm is sleep), with the stop that ends it.
func targetPid(pid string) (string, func(), error) {
	if pid != "child" {
		return pid, func() {}, nil
	}
	c := exec.Command("/bin/sleep", "60")
	if err := c.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { c.Process.Kill(); c.Wait() }
	pid = strconv.Itoa(c.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if comm, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
			return pid, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("the child %s did not execute /bin/sleep within 10s", pid)
		}
	}
}

func outcome(err error) result {
	if err != nil {
		return result{Errno: errnoOf(err), Error: err.Error()}
	}
	return result{OK: true}
}

func runAgent(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "agent: no mode")
		return 2
	}
	var r result
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch args[0] {
	case "plant":
		r = plantTraces(arg(1))
	case "traces":
		r = findTraces()
	case "procs":
		entries, err := os.ReadDir("/proc")
		r = outcome(err)
		r.Value = strconv.Itoa(os.Getpid())
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				r.List = append(r.List, e.Name())
			}
		}
	case "kill":
		pid, _ := strconv.Atoi(arg(1))
		r = outcome(unix.Kill(pid, unix.SIGKILL))
	case "ptrace":
		pid, _ := strconv.Atoi(arg(1))
		r = outcome(unix.PtraceAttach(pid))
	case "read":
		b, err := os.ReadFile(arg(1))
		r = outcome(err)
		r.Value = string(b)
	case "write":
		r = outcome(os.WriteFile(arg(1), []byte("sandbox"), 0o644))
	case "ifaces":
		ifs, err := net.Interfaces()
		r = outcome(err)
		for _, i := range ifs {
			r.List = append(r.List, i.Name)
		}
	case "connect":
		c, err := net.DialTimeout("tcp", arg(1), 5*time.Second)
		r = outcome(err)
		if err == nil {
			b := make([]byte, 64)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, _ := c.Read(b)
			r.Value = string(b[:n])
			c.Close()
		}
	case "tty":
		// A terminal as stdin that is the controlling terminal, and a pty
		// of the sandbox's own devpts.
		_, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		r = outcome(err)
		r.Value = fmt.Sprintf("isatty=%v", term.IsTerminal(0))
		if ptmx, tty, err := pty.Open(); err != nil {
			r.OK, r.Error = false, "openpty: "+err.Error()
		} else {
			r.List = []string{tty.Name()}
			ptmx.Close()
			tty.Close()
		}
	case "ctty":
		// The controlling terminal, if the process has one.
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		r = outcome(err)
		if err == nil {
			f.Close()
		}
	case "fds":
		// What every open descriptor above stdio is.
		entries, err := os.ReadDir("/proc/self/fd")
		r = outcome(err)
		for _, e := range entries {
			if n, _ := strconv.Atoi(e.Name()); n > 2 {
				target, _ := os.Readlink("/proc/self/fd/" + e.Name())
				r.List = append(r.List, target)
			}
		}
	case "autogroup-nice":
		// Lower its scheduling group's weight as far as it goes (or, with
		// arg(1), the group of process arg(1)).
		// The kernel takes one change per 100 ms from a process without
		// CAP_SYS_ADMIN (EAGAIN): try for a while.
		target := "self"
		if arg(1) != "" {
			target = arg(1)
		}
		var err error
		for range 100 {
			var f *os.File
			if f, err = os.OpenFile("/proc/"+target+"/autogroup", os.O_WRONLY, 0); err == nil {
				_, err = f.WriteString("19")
				f.Close()
			}
			if !errors.Is(err, syscall.EAGAIN) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		r = outcome(err)
	case "policy":
		// Its scheduling policy, and its child's (a shell's).
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			r = outcome(err)
			break
		}
		child, err := exec.Command("/bin/sh", "-c", "cut -d' ' -f41 /proc/self/stat").Output()
		r = result{OK: err == nil, Value: strconv.Itoa(int(attr.Policy)), List: []string{strings.TrimSpace(string(child))}, Error: fmt.Sprint(err)}
	case "sched":
		// Its scheduling policy and nice value, "policy/nice".
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			r = outcome(err)
			break
		}
		r = result{OK: true, Value: fmt.Sprintf("%d/%d", attr.Policy, attr.Nice)}
	case "slowinit":
		// Give every thread of the init SCHED_IDLE and nice 19 (neither
		// can be undone without CAP_SYS_NICE): the init's forker thread
		// would pass both to the next harness it forks.
		tasks, err := os.ReadDir("/proc/1/task")
		for _, e := range tasks {
			tid, _ := strconv.Atoi(e.Name())
			if err = unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_IDLE, Nice: 19}, 0); err != nil {
				err = fmt.Errorf("sched_setattr %d: %w", tid, err)
				break
			}
		}
		r = outcome(err)
	case "id":
		r = result{OK: true, Value: fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())}
	case "env":
		r = result{OK: true, List: os.Environ()}
	case "hostname":
		h, err := os.Hostname()
		r = outcome(err)
		r.Value = h
	case "forkflood":
		n, _ := strconv.Atoi(arg(1))
		var started []*exec.Cmd
		var err error
		for i := 0; i < n; i++ {
			c := exec.Command("/bin/sleep", "60")
			if err = c.Start(); err != nil {
				break
			}
			started = append(started, c)
		}
		r = outcome(err)
		r.N = len(started)
	case "memhog":
		mb, _ := strconv.Atoi(arg(1))
		var keep [][]byte
		for i := 0; i < mb; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(j)
			}
			keep = append(keep, b)
		}
		r = result{OK: true, N: len(keep)}
	case "mount":
		r = outcome(unix.Mount("tmpfs", "/tmp", "tmpfs", 0, ""))
	case "unshare":
		r = outcome(unix.Unshare(unix.CLONE_NEWUSER))
	case "clone3":
		// An invalid clone3 (size 0) never makes a child: EINVAL from the
		// kernel, ENOSYS from the filter.
		_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
		r = outcome(e)
		if e == 0 {
			r = outcome(nil)
		}
	case "iouring":
		// io_uring_setup(1, &params): a ring fd on success.
		var params [120]byte
		fd, _, e := unix.RawSyscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		r = outcome(errOf(e))
		if e == 0 {
			unix.Close(int(fd))
		}
	case "sys":
		// One denied system call with arguments an unprivileged process
		// may use where nothing filters it.
		r = outcome(deniedCall(arg(1)))
	case "socket":
		// socket(family, SOCK_STREAM, 0) for a family number.
		fam, _ := strconv.Atoi(arg(1))
		fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		r = outcome(err)
		if err == nil {
			unix.Close(fd)
		}
	case "syslog":
		// SYSLOG_ACTION_SIZE_BUFFER (10): the kernel log's size.
		n, _, e := unix.RawSyscall(unix.SYS_SYSLOG, 10, 0, 0)
		r = outcome(errOf(e))
		r.N = int(n)
	case "unixconnect":
		c, err := net.DialTimeout("unix", arg(1), 5*time.Second)
		r = outcome(err)
		if err == nil {
			c.Close()
		}
	case "abstractself":
		// Listen on an abstract socket of its own and connect to it: a
		// domain's own sockets stay reachable.
		name := "@" + arg(1)
		ln, err := net.Listen("unix", name)
		if err == nil {
			var c net.Conn
			if c, err = net.DialTimeout("unix", name, 5*time.Second); err == nil {
				c.Close()
			}
			ln.Close()
		}
		r = outcome(err)
	case "statfs":
		var st unix.Statfs_t
		r = outcome(unix.Statfs(arg(1), &st))
		r.N = int(st.Blocks * uint64(st.Bsize) >> 20) // MiB
	case "fill":
		// Write up to arg(2) MiB into the file arg(1); N is how many MiB
		// were written before the first error.
		mb, _ := strconv.Atoi(arg(2))
		f, err := os.Create(arg(1))
		if err == nil {
			chunk := make([]byte, 1<<20)
			for r.N = 0; r.N < mb; r.N++ {
				if _, err = f.Write(chunk); err != nil {
					break
				}
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			os.Remove(arg(1))
		}
		r = result{OK: err == nil, Errno: errnoOf(err), N: r.N, Error: fmt.Sprint(err)}
	case "ptys":
		// Open up to arg(1) ptys and hold them: N is how many opened
		// before the first error; the agent then waits to be killed.
		n, _ := strconv.Atoi(arg(1))
		var held []*os.File
		var err error
		for i := 0; i < n; i++ {
			var ptmx *os.File
			if ptmx, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0); err != nil {
				break
			}
			held = append(held, ptmx)
		}
		r = outcome(err)
		r.N = len(held)
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		time.Sleep(10 * time.Minute)
		return 0
	case "setuid0":
		r = outcome(unix.Setresuid(0, 0, 0))
	case "exit":
		n, _ := strconv.Atoi(arg(1))
		return n
	case "signal":
		n, _ := strconv.Atoi(arg(1))
		unix.Kill(os.Getpid(), unix.Signal(n))
		time.Sleep(time.Minute)
		return 0
	case "spawn":
		// Background processes that outlive the agent if nothing kills
		// them: one in its own session.
		for i := 0; i < 3; i++ {
			c := exec.Command("/bin/sleep", "600")
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: i == 0}
			if err := c.Start(); err != nil {
				r = outcome(err)
				break
			}
			r.List = append(r.List, strconv.Itoa(c.Process.Pid))
		}
		r.OK = len(r.List) == 3
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		time.Sleep(10 * time.Minute)
		return 0
	case "term":
		// Report SIGTERM delivered by the init's forwarding, then exit 3.
		ch := make(chan os.Signal, 1)
		signalNotify(ch)
		fmt.Println(`{"ok":true,"value":"waiting"}`)
		<-ch
		fmt.Println(`{"ok":true,"value":"got SIGTERM"}`)
		return 3
	case "self":
		// What the harness holds: every descriptor above stdio but the
		// one this listing opens (List), and its status's restrictions
		// (Value: "Field:value" for each, space-separated).
		entries, err := os.ReadDir("/proc/self/fd")
		r = outcome(err)
		for _, e := range entries {
			if n, _ := strconv.Atoi(e.Name()); n > 2 {
				target, err := os.Readlink("/proc/self/fd/" + e.Name())
				if err != nil { // the listing's own descriptor, closed by now
					continue
				}
				r.List = append(r.List, e.Name()+" "+target)
			}
		}
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			r = outcome(err)
			break
		}
		var fields []string
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			switch k {
			case "Uid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
				fields = append(fields, k+":"+strings.Join(strings.Fields(v), ","))
			}
		}
		r.Value = strings.Join(fields, " ")
	case "oom-adj":
		// Raise the OOM score of process arg(1) ("child": a /bin/sleep of
		// the agent's own) to 1000, the kernel's first choice of victim,
		// and read it back.
		target, stop, err := targetPid(arg(1))
		if err != nil {
			r = outcome(err)
			break
		}
		defer stop()
		r = outcome(os.WriteFile("/proc/"+target+"/oom_score_adj", []byte("1000"), 0))
		b, _ := os.ReadFile("/proc/" + target + "/oom_score_adj")
		r.Value = strings.TrimSpace(string(b))
	case "pdeath":
		// Ask for SIGUSR2 at the parent's death, then wait arg(1)
		// seconds: Value is "none" or the signal that came. With
		// arg(2) == "control", first the positive control: a
		// /bin/sleep forked, with the same request, from a thread that
		// then exits must get the signal (List: its end).
		if arg(2) == "control" {
			// Keep the main thread (which the runtime never lets exit)
			// from running the forking goroutine.
			runtime.LockOSThread()
			done := make(chan string, 1)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
				c := exec.Command("/bin/sleep", "5")
				c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGUSR2}
				if err := c.Start(); err != nil {
					done <- "start: " + err.Error()
					return
				}
				go func() { c.Wait(); done <- c.ProcessState.String() }()
			}()
			r.List = []string{<-done}
			runtime.UnlockOSThread()
		}
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGUSR2)
		r = result{OK: unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGUSR2), 0, 0, 0) == nil, List: r.List}
		secs, _ := strconv.Atoi(arg(1))
		select {
		case s := <-ch:
			r.Value = s.String()
		case <-time.After(time.Duration(secs) * time.Second):
			r.Value = "none"
		}
	case "initsig":
		// Send signal arg(1) to the init (PID 1), report, then wait to be
		// killed: a run that ends without the init's death ends by the
		// agent's own exit 0 after the wait.
		n, _ := strconv.Atoi(arg(1))
		r = outcome(unix.Kill(1, unix.Signal(n)))
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		// The Go runtime dies of such a signal within milliseconds.
		time.Sleep(300 * time.Millisecond)
		return 0
	case "reach":
		// Try every way into the process arg(1) ("child": a /bin/sleep of
		// the agent's own, the positive control) and into each of its
		// threads: ptrace, its memory, environment and descriptors, a
		// descriptor of it through pidfd_getfd, process_vm_readv. List
		// names each try that succeeded ("tid op"); N counts tries.
		target, stop, err := targetPid(arg(1))
		if err != nil {
			r = outcome(err)
			break
		}
		defer stop()
		r.Value = target
		tasks, err := os.ReadDir("/proc/" + target + "/task")
		if err != nil {
			r = outcome(err)
			break
		}
		r.OK = true
		try := func(tid, op string, err error) {
			r.N++
			if err == nil {
				r.List = append(r.List, tid+" "+op)
			}
		}
		for _, e := range tasks {
			tid := e.Name()
			dir := "/proc/" + target + "/task/" + tid
			n, _ := strconv.Atoi(tid)
			try(tid, "ptrace", ptraceOnce(n))
			f, err := os.Open(dir + "/mem")
			if err == nil {
				f.Close()
			}
			try(tid, "mem", err)
			_, err = os.ReadFile(dir + "/environ")
			try(tid, "environ", err)
			// Listing the descriptors' numbers is not reading them: each
			// one listed is tried by its link, an open and its fdinfo.
			fds, err := os.ReadDir(dir + "/fd")
			for _, fd := range fds {
				_, err := os.Readlink(dir + "/fd/" + fd.Name())
				try(tid, "fd/"+fd.Name()+" readlink", err)
				f, err := os.OpenFile(dir+"/fd/"+fd.Name(), os.O_RDONLY|syscall.O_NONBLOCK, 0)
				if err == nil {
					f.Close()
				}
				try(tid, "fd/"+fd.Name()+" open", err)
				_, err = os.ReadFile(dir + "/fdinfo/" + fd.Name())
				try(tid, "fdinfo/"+fd.Name(), err)
			}
			if err == nil {
				r.Error += fmt.Sprintf("tid %s lists %d fds; ", tid, len(fds))
			}
			_, err = os.Readlink(dir + "/cwd")
			try(tid, "cwd", err)
			_, err = os.ReadFile(dir + "/syscall")
			try(tid, "syscall", err)
		}
		pid, _ := strconv.Atoi(target)
		// pidfd_open needs no right over the process (only that it be
		// visible): not a try; pidfd_getfd needs ptrace's.
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			fd, err := unix.PidfdGetfd(pidfd, 0, 0)
			try(target, "pidfd_getfd", err)
			if err == nil {
				unix.Close(fd)
			}
			unix.Close(pidfd)
		}
		dst := make([]byte, 1)
		local := []unix.Iovec{{Base: &dst[0], Len: 1}}
		remote := []unix.RemoteIovec{{Base: 0x400000, Len: 1}} // EFAULT past the check
		_, err = unix.ProcessVMReadv(pid, local, remote, 0)
		if errors.Is(err, unix.EFAULT) {
			err = nil
		}
		try(target, "process_vm_readv", err)
	default:
		mode, ok := recycleModes[args[0]]
		if !ok {
			fmt.Fprintln(os.Stderr, "agent: unknown mode", args[0])
			return 2
		}
		r = mode(args[1:])
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	return 0
}

// ptraceOnce attaches to tid and lets it go again.
func ptraceOnce(tid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(tid); err != nil {
		return err
	}
	unix.PtraceDetach(tid)
	return nil
}

var _ = strings.TrimSpace
