package entrypoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

// Bounds of the polls; none of them is a timing assertion.
const (
	startBound = 20 * time.Second
	pollBound  = 20 * time.Second
	exitBound  = 60 * time.Second
)

// skipOrFail skips the test for a missing prerequisite, or fails it under
// CI=true, where every prerequisite must be present.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	testbin.Missing(t, format, args...)
}

var (
	unshareOnce sync.Once
	unshareArgs []string // how to make a PID namespace here; nil when impossible
	unshareWhy  string
)

// pidNamespaceArgs returns the unshare(1) arguments that make a PID namespace
// (with its own /proc) on this machine, trying plain unshare (root) and then
// an unprivileged user namespace; it skips (or fails under CI) when neither
// works.
func pidNamespaceArgs(t *testing.T) []string {
	t.Helper()
	unshareOnce.Do(func() {
		path, err := exec.LookPath("unshare")
		if err != nil {
			unshareWhy = "unshare(1) not found: " + err.Error()
			return
		}
		var errs []string
		for _, extra := range [][]string{nil, {"--user", "--map-root-user"}} {
			args := append(append([]string{path}, extra...), "--pid", "--fork", "--mount-proc", "--kill-child")
			out, err := exec.Command(args[0], append(args[1:], "true")...).CombinedOutput()
			if err == nil {
				unshareArgs = args
				return
			}
			errs = append(errs, fmt.Sprintf("%s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out)))
		}
		unshareWhy = "cannot create a PID namespace (needs root, or unprivileged user namespaces): " + strings.Join(errs, "; ")
	})
	if unshareArgs == nil {
		skipOrFail(t, "%s", unshareWhy)
	}
	return unshareArgs
}

// nsProc is a process of the namespace, seen from the host.
type nsProc struct {
	host, nsPid, ppid int
	state             byte
	cmd               string
}

func (p nsProc) String() string {
	return fmt.Sprintf("pid %d (ns %d, ppid %d, %c) %s", p.host, p.nsPid, p.ppid, p.state, p.cmd)
}

// nsDaemon is harnessd running as PID 1 of its own PID namespace.
type nsDaemon struct {
	t        *testing.T
	cmd      *exec.Cmd // unshare
	pid      int       // harnessd's host pid
	ns       string    // its PID namespace, "pid:[N]"
	addr     string
	logPath  string
	exited   chan struct{}
	exitCode int
}

// startNS starts harnessd serve with args as PID 1 of a new PID namespace
// (the network namespace is shared: it listens on 127.0.0.1) and waits for
// it to listen. Cleanup kills it if it still runs and checks that no process
// of the namespace survives.
func startNS(t *testing.T, args ...string) *nsDaemon {
	t.Helper()
	ns := pidNamespaceArgs(t)
	dir := t.TempDir()
	d := &nsDaemon{t: t, logPath: filepath.Join(dir, "harnessd.log"), exited: make(chan struct{})}
	addrFile := filepath.Join(dir, "addr")
	argv := append(append([]string{}, ns...), testbin.Path(t, "harnessd"), "serve",
		"--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-format", "json", "--log-level", "debug",
		// PID 1's own reaping of the harness's orphans is what these tests
		// watch: a sandboxed harness has its own init and PID namespace.
		"--isolation", "process")
	argv = append(argv, args...)
	logf, err := os.Create(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "HOME=" + dir}
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// If the test binary dies, unshare dies, and --kill-child takes the
	// namespace's init (and so the namespace) with it.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	go func() {
		d.cmd.Wait()
		d.exitCode = d.cmd.ProcessState.ExitCode()
		close(d.exited)
	}()
	t.Cleanup(d.cleanup)

	deadline := time.Now().Add(startBound)
	for d.pid == 0 {
		if kids := childrenOf(d.cmd.Process.Pid); len(kids) > 0 {
			d.pid = kids[0]
		} else if d.done() || time.Now().After(deadline) {
			t.Fatalf("no harnessd below unshare; log:\n%s", d.log())
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if d.ns, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", d.pid)); err != nil {
		t.Fatalf("namespace of harnessd: %v", err)
	}
	if own, _ := os.Readlink("/proc/self/ns/pid"); own == d.ns {
		t.Fatalf("harnessd is in the test's own PID namespace %s", own)
	}
	if nsPid := nsPidOf(d.pid); nsPid != 1 {
		t.Fatalf("harnessd is pid %d of its namespace, want 1", nsPid)
	}
	for d.addr == "" {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			d.addr = string(bytes.TrimSpace(b))
		} else if d.done() || time.Now().After(deadline) {
			t.Fatalf("harnessd did not listen; log:\n%s", d.log())
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return d
}

func (d *nsDaemon) url() string { return "http://" + d.addr }

func (d *nsDaemon) done() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// signal sends sig to the namespace's PID 1 from the host.
func (d *nsDaemon) signal(sig syscall.Signal) {
	d.t.Helper()
	if err := unix.Kill(d.pid, sig); err != nil {
		d.t.Fatalf("kill -%v %d: %v", sig, d.pid, err)
	}
}

// wait waits (bounded) for harnessd to exit and returns its exit code, which
// unshare --fork passes on.
func (d *nsDaemon) wait() int {
	d.t.Helper()
	select {
	case <-d.exited:
		return d.exitCode
	case <-time.After(exitBound):
		d.t.Fatalf("harnessd did not exit within %s; log:\n%s", exitBound, d.log())
		return -1
	}
}

func (d *nsDaemon) cleanup() {
	killed := !d.done()
	if killed {
		if d.pid > 0 {
			unix.Kill(d.pid, unix.SIGKILL) // the kernel then ends the namespace
		}
		select {
		case <-d.exited:
		case <-time.After(exitBound):
			d.cmd.Process.Kill()
			<-d.exited
		}
	}
	if d.ns == "" {
		return
	}
	if left := d.waitProcs(func(ps []nsProc) bool { return len(ps) == 0 }); len(left) > 0 {
		d.t.Errorf("processes of the namespace survived: %v", left)
	}
	// harnessd removes its cgroup directory when it exits by itself; one
	// killed here (or by a crash) cannot, so remove what it left.
	for _, r := range d.records() {
		dir, _ := r["cgroup"].(string)
		if r["msg"] != "process isolation" || dir == "" {
			continue
		}
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if !killed && d.exitCode == 0 {
			d.t.Errorf("harnessd exited 0 but left its cgroup directory %s", dir)
		}
		leaves, _ := os.ReadDir(dir)
		for _, l := range leaves {
			if l.IsDir() {
				os.Remove(filepath.Join(dir, l.Name()))
			}
		}
		os.Remove(dir)
	}
}

// procs lists the namespace's processes (zombies included).
func (d *nsDaemon) procs() []nsProc {
	var out []nsProc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil || l != d.ns {
			continue
		}
		p := nsProc{host: pid, nsPid: nsPidOf(pid)}
		st, ok := readStat(pid)
		if !ok {
			continue
		}
		p.ppid, p.state = st.ppid, st.state
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
			p.cmd = strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		}
		out = append(out, p)
	}
	return out
}

// waitProcs polls the namespace's processes until ok accepts them or the
// bound passes, and returns the last list when it did not.
func (d *nsDaemon) waitProcs(ok func([]nsProc) bool) []nsProc {
	deadline := time.Now().Add(pollBound)
	for {
		ps := d.procs()
		if ok(ps) {
			return nil
		}
		if time.Now().After(deadline) {
			return ps
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// onlyInit accepts a namespace holding nothing but harnessd itself.
func (d *nsDaemon) onlyInit(ps []nsProc) bool {
	return len(ps) == 1 && ps[0].host == d.pid
}

// byNsPid finds the process that is pid n inside the namespace.
func (d *nsDaemon) byNsPid(n int) (nsProc, bool) {
	for _, p := range d.procs() {
		if p.nsPid == n {
			return p, true
		}
	}
	return nsProc{}, false
}

func (d *nsDaemon) log() string {
	b, _ := os.ReadFile(d.logPath)
	return string(b)
}

// records parses harnessd's JSON log.
func (d *nsDaemon) records() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(d.log()))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// waitLog polls harnessd's log until a record with msg appears.
func (d *nsDaemon) waitLog(msg string) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(pollBound)
	for {
		for _, r := range d.records() {
			if r["msg"] == msg {
				return r
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no %q in harnessd's log:\n%s", msg, d.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// health returns the HTTP status of GET /health.
func health(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stat is what the tests read of /proc/<pid>/stat.
type stat struct {
	ppid  int
	state byte
}

func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 2 || len(f[0]) != 1 {
		return stat{}, false
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return stat{ppid: ppid, state: f[0][0]}, true
}

// nsPidOf returns pid's number in its own (innermost) PID namespace.
func nsPidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[len(f)-1])
				return n
			}
		}
	}
	return 0
}

// childrenOf lists pid's children.
func childrenOf(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// pidAfter extracts the number following word in a response ("orphaned 23").
func pidAfter(t *testing.T, response, word string) int {
	t.Helper()
	_, rest, ok := strings.Cut(response, word+" ")
	if !ok {
		t.Fatalf("response %q has no %q", response, word)
	}
	n, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil {
		t.Fatalf("response %q: %v", response, err)
	}
	return n
}

var errNoRecord = errors.New("no such record")

// recordIndex returns the position of the first record with msg for which
// match (if given) is true.
func recordIndex(recs []map[string]any, msg string, match func(map[string]any) bool) (int, error) {
	for i, r := range recs {
		if r["msg"] == msg && (match == nil || match(r)) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%q: %w", msg, errNoRecord)
}
