package agent

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The attacks on the host: files, /proc, signals, ptrace, cgroups and
// resources (attack.go has the network ones).

func snippet(b []byte) string {
	s := strings.ReplaceAll(string(b), "\x00", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// attackReadFile: "read-file PATH". OK when PATH yields bytes (a hidden
// file reads as empty: that tells the attacker nothing).
func attackReadFile(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "read-file PATH"); r != nil {
		return *r
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return failed(err, "read "+args[0])
	}
	if len(b) == 0 {
		return AttackResult{Detail: args[0] + " reads as empty"}
	}
	return AttackResult{OK: true, Count: len(b), Detail: snippet(b)}
}

// attackWriteFile: "write-file PATH" — create or overwrite PATH. OK when
// written.
func attackWriteFile(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "write-file PATH"); r != nil {
		return *r
	}
	if err := os.WriteFile(args[0], []byte("pwned by the harness\n"), 0o644); err != nil {
		return failed(err, "write "+args[0])
	}
	return AttackResult{OK: true, Detail: "wrote " + args[0]}
}

// attackListDir: "list-dir PATH". OK when PATH lists with at least one
// entry (an empty directory tells the attacker nothing).
func attackListDir(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "list-dir PATH"); r != nil {
		return *r
	}
	es, err := os.ReadDir(args[0])
	if err != nil {
		return failed(err, "list "+args[0])
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return AttackResult{OK: len(es) > 0, Count: len(es), Detail: snippet([]byte(strings.Join(names, " ")))}
}

func pidArg(args []string, usage string) (int, *AttackResult) {
	if r := needArgs(args, 1, usage); r != nil {
		return 0, r
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 0 {
		return 0, &AttackResult{Errno: "EINVAL", Detail: fmt.Sprintf("bad pid %q", args[0])}
	}
	return pid, nil
}

// attackProcRead reads /proc/PID/file. OK when it yields bytes.
func attackProcRead(file string, args []string) AttackResult {
	pid, bad := pidArg(args, "proc-"+file+" PID")
	if bad != nil {
		return *bad
	}
	p := fmt.Sprintf("/proc/%d/%s", pid, file)
	b, err := os.ReadFile(p)
	if err != nil {
		return failed(err, "read "+p)
	}
	if len(b) == 0 {
		return AttackResult{Detail: p + " is empty"}
	}
	return AttackResult{OK: true, Count: len(b), Detail: snippet(b)}
}

// attackProcMem: "proc-mem PID" — read the first readable mapping of PID
// through /proc/PID/mem. OK when bytes come back.
func attackProcMem(_ context.Context, args []string) AttackResult {
	pid, bad := pidArg(args, "proc-mem PID")
	if bad != nil {
		return *bad
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return failed(err, "open mem")
	}
	defer f.Close()
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return failed(err, "open maps")
	}
	defer maps.Close()
	sc := bufio.NewScanner(maps)
	var lastErr error
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[1], "r") {
			continue
		}
		lo, _, _ := strings.Cut(fields[0], "-")
		addr, err := strconv.ParseUint(lo, 16, 64)
		if err != nil {
			continue
		}
		buf := make([]byte, 64)
		n, err := f.ReadAt(buf, int64(addr))
		if n > 0 {
			return AttackResult{OK: true, Count: n, Detail: fmt.Sprintf("read %d bytes at %#x", n, addr)}
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no readable mapping in maps: %w", syscall.ENOENT)
	}
	return failed(lastErr, "read mem")
}

// attackPtrace: "ptrace PID" — PTRACE_ATTACH (detached again at once). OK
// when the attach succeeded.
func attackPtrace(_ context.Context, args []string) AttackResult {
	pid, bad := pidArg(args, "ptrace PID")
	if bad != nil {
		return *bad
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceAttach(pid); err != nil {
		return failed(err, "PTRACE_ATTACH")
	}
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, unix.WALL, nil)
	unix.PtraceDetach(pid)
	return AttackResult{OK: true, Detail: fmt.Sprintf("attached to %d", pid)}
}

// attackKill: "kill PID SIGNAL" (a number or a name such as KILL or
// SIGKILL; 0 probes). OK when the signal was delivered.
func attackKill(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 2, "kill PID SIGNAL"); r != nil {
		return *r
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid == 0 {
		return AttackResult{Errno: "EINVAL", Detail: fmt.Sprintf("bad pid %q", args[0])}
	}
	sig, err := strconv.Atoi(args[1])
	if err != nil {
		name := strings.ToUpper(args[1])
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		s := unix.SignalNum(name)
		if s == 0 {
			return AttackResult{Errno: "EINVAL", Detail: fmt.Sprintf("bad signal %q", args[1])}
		}
		sig = int(s)
	}
	if err := syscall.Kill(pid, syscall.Signal(sig)); err != nil {
		return failed(err, fmt.Sprintf("kill(%d, %d)", pid, sig))
	}
	return AttackResult{OK: true, Detail: fmt.Sprintf("signal %d sent to %d", sig, pid)}
}

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// attackJoinCgroup: "join-cgroup" — write this process's pid into every
// cgroup.procs under /sys/fs/cgroup (the root ones first). OK when any
// write succeeded: the process left its cgroup.
func attackJoinCgroup(_ context.Context, _ []string) AttackResult {
	files := []string{cgroupRoot + "/cgroup.procs"}
	if es, err := os.ReadDir(cgroupRoot); err == nil {
		for _, e := range es {
			files = append(files, filepath.Join(cgroupRoot, e.Name(), "cgroup.procs"))
		}
	}
	seen := map[string]bool{}
	filepath.WalkDir(cgroupRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" && len(files) < 4096 {
			files = append(files, p)
		}
		return nil
	})
	pid := []byte(strconv.Itoa(os.Getpid()))
	var r AttackResult
	var joined []string
	tried := 0
	for _, f := range files {
		if seen[f] {
			continue
		}
		seen[f] = true
		tried++
		err := os.WriteFile(f, pid, 0)
		if err == nil {
			r.Count++
			if len(joined) < 5 {
				joined = append(joined, f)
			}
			continue
		}
		if r.Errno == "" || r.Errno == "ENOENT" {
			if e := errnoOf(err); e != "" {
				r.Errno = e
			}
		}
	}
	r.OK = r.Count > 0
	r.Detail = fmt.Sprintf("tried %d cgroup.procs files, joined %d %v", tried, r.Count, joined)
	return r
}

// attackForkFlood: "forkflood [MAX]" — start sleeping children until the
// kernel refuses one (or MAX, default 512, are running), report how many
// started, then end them. OK when MAX were started without refusal.
func attackForkFlood(ctx context.Context, args []string) AttackResult {
	limit := 512
	if len(args) > 0 {
		if n, err := strconv.Atoi(args[0]); err == nil && n > 0 {
			limit = n
		}
	}
	var kids []*os.Process
	var r AttackResult
	defer func() {
		for _, p := range kids {
			p.Kill()
			p.Wait()
		}
	}()
	for len(kids) < limit && ctx.Err() == nil {
		// A fork and exec of a small C program (sleep), not of this Go
		// binary: one task per child.
		p, err := os.StartProcess(sleepProgram(), []string{"sleep", "60"}, &os.ProcAttr{Env: []string{}})
		if err != nil {
			r.Errno = errnoOf(err)
			r.Detail = err.Error()
			break
		}
		kids = append(kids, p)
	}
	r.Count = len(kids)
	r.OK = r.Errno == ""
	r.Detail = fmt.Sprintf("started %d children; %s", r.Count, r.Detail)
	return r
}

// sleepProgram finds sleep(1), else this binary's own sleep.
func sleepProgram() string {
	if p, err := exec.LookPath("sleep"); err == nil {
		return p
	}
	return "/bin/sleep"
}

// attackMemHog: "memhog SIZE" — allocate and touch SIZE bytes (64M, 1024M).
// OK when every page was touched.
func attackMemHog(_ context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "memhog SIZE"); r != nil {
		return *r
	}
	n, err := parseSize(args[0])
	if err != nil {
		return AttackResult{Errno: "EINVAL", Detail: err.Error()}
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return failed(err, "mmap")
	}
	defer unix.Munmap(b)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return AttackResult{OK: true, Count: n, Detail: fmt.Sprintf("touched %d bytes", n)}
}

// attackEscape: "escape" — a setsid child with an empty environment forks
// a sleeper and exits (a double fork), leaving the sleeper without parent,
// session or environment to outlive everything. Reports the sleeper's pid
// as the attacker sees it and its identity from /proc. OK when the sleeper
// runs (whether it outlives its episode is for the host to check).
func attackEscape(ctx context.Context, args []string) AttackResult {
	if len(args) == 0 || args[0] != "stage2" {
		return inChild(ctx, true, "escape", "stage2")
	}
	// Stage 2: in a new session with an empty environment; start the
	// sleeper and exit.
	cmd := exec.Command(selfPath(), "sleep", "--ignore-term", "1h")
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return failed(err, "start the sleeper")
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	time.Sleep(20 * time.Millisecond)
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var ids []string
	for _, line := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "NSpid:") {
			ids = append(ids, strings.Join(strings.Fields(line), " "))
		}
	}
	return AttackResult{OK: true, Pid: pid, Detail: strings.Join(ids, "; ")}
}
