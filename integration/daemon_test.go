package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

// markerVar is set in every daemon's environment with a value unique to the
// daemon. The harness environment allowlist passes LC_* on, so harnesses,
// tool servers, rubric commands and everything they start carry it.
const markerVar = "LC_HARNESSD_TEST"

// Bounds of polls; generous because CI machines are slow. They bound waits,
// they are never what a test asserts.
const (
	startTimeout = 30 * time.Second
	goneTimeout  = 20 * time.Second
	frameTimeout = 60 * time.Second
	stopTimeout  = 60 * time.Second
)

func harnessdBin(t testing.TB) string    { return testbin.Path(t, "harnessd") }
func testharnessBin(t testing.TB) string { return testbin.Path(t, "testharness") }

// agentCmd is the jsonl test harness with optional start-up flags.
func agentCmd(t testing.TB, flags ...string) []string {
	return append([]string{testharnessBin(t), "agent"}, flags...)
}

// toolsFlag serves `testharness tools` to the harness.
func toolsFlag(t testing.TB) string {
	return fmt.Sprintf("--tool=stdio:'%s' tools", testharnessBin(t))
}

// daemon is a running `harnessd serve`.
type daemon struct {
	t      testing.TB
	URL    string // http://127.0.0.1:PORT
	Addr   string // 127.0.0.1:PORT
	Marker string
	Dir    string // private TMPDIR (workspaces live under it)
	// ConfigPath is the --config file, where the test records it.
	ConfigPath string
	cmd        *exec.Cmd
	log        *testbin.Buffer
	exited     chan struct{}
	state      *os.ProcessState
	client     *http.Client // reaches Addr (the spec's Dial)
}

// spec describes a daemon to start.
type spec struct {
	Flags   []string // serve flags
	Harness []string // the command after --; nil: none (config gives it)
	Env     []string // extra environment (NAME=VALUE)
	// Start starts the daemon's command (nil: cmd.Start); a test that runs
	// the daemon in another network namespace starts it from there.
	Start func(*exec.Cmd) error
	// Dial reaches the daemon's address (nil: the test's own network).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Bin is the harnessd binary to run ("": the one built for the tests),
	// e.g. an earlier build that a benchmark compares with in the same run.
	Bin string
}

func newMarker() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cleanEnv is the test's environment without variables that change the
// daemon's behaviour, plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "OPENENV_MODE", name == "HARNESSD_API_TOKEN", name == "TMPDIR", name == markerVar:
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// startDaemon starts `harnessd serve` on 127.0.0.1:0 and waits for its
// address. When the test ends the daemon gets SIGTERM, must exit, and must
// leave no process carrying its marker behind.
func startDaemon(t testing.TB, s spec) *daemon {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir paths can be long; the addr file and workspaces go under it.
	addrFile := filepath.Join(dir, "addr")
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-format", "json", "--log-level", "debug"}, s.Flags...)
	if len(s.Harness) > 0 {
		args = append(append(args, "--"), s.Harness...)
	}
	d := &daemon{t: t, Marker: newMarker(), Dir: dir, log: &testbin.Buffer{}, exited: make(chan struct{})}
	bin := s.Bin
	if bin == "" {
		bin = harnessdBin(t)
	}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = cleanEnv(append([]string{markerVar + "=" + d.Marker, "TMPDIR=" + dir}, s.Env...)...)
	d.cmd.Dir = dir
	d.cmd.Stdout = d.log
	d.cmd.Stderr = d.log
	d.client = http.DefaultClient
	if s.Dial != nil {
		d.client = &http.Client{Transport: &http.Transport{DialContext: s.Dial}}
	}
	start := (*exec.Cmd).Start
	if s.Start != nil {
		start = s.Start
	}
	if err := start(d.cmd); err != nil {
		t.Fatalf("start harnessd: %v", err)
	}
	go func() {
		d.cmd.Wait()
		d.state = d.cmd.ProcessState
		close(d.exited)
	}()
	t.Cleanup(func() { d.finish() })

	deadline := time.Now().Add(startTimeout)
	for {
		b, err := os.ReadFile(addrFile)
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			d.Addr = strings.TrimSpace(string(b))
			d.URL = "http://" + d.Addr
			return d
		}
		select {
		case <-d.exited:
			t.Fatalf("harnessd exited before listening (%v):\n%s", d.state, d.log.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("harnessd did not write %s within %s:\n%s", addrFile, startTimeout, d.log.String())
		}
	}
}

// isolationProcess runs harnesses as the daemon's children: for tests of
// process isolation itself, and for tests whose harness writes marker files
// into the test's directory or reports pids, which a sandboxed harness's
// private /tmp and PID namespace keep from the host.
var isolationProcess = []string{"--isolation", "process"}

// isolationSandbox asks for the sandbox by name: a benchmark comparing
// isolations must not run its sandbox level in whatever infoLog holds.
var isolationSandbox = []string{"--isolation", "sandbox"}

// Pid is the daemon's pid.
func (d *daemon) Pid() int { return d.cmd.Process.Pid }

// Log returns what the daemon logged so far.
func (d *daemon) Log() string { return d.log.String() }

// Signal sends sig to the daemon.
func (d *daemon) Signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signal harnessd: %v", err)
	}
}

// Wait waits for the daemon to exit and returns its exit code (-1 when
// killed by a signal).
func (d *daemon) Wait() int {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(stopTimeout):
		d.cmd.Process.Kill()
		<-d.exited
		d.t.Fatalf("harnessd did not exit within %s:\n%s", stopTimeout, d.log.String())
	}
	return d.state.ExitCode()
}

// Stop sends SIGTERM and returns the exit code.
func (d *daemon) Stop() int {
	d.t.Helper()
	select {
	case <-d.exited:
	default:
		d.cmd.Process.Signal(syscall.SIGTERM)
	}
	return d.Wait()
}

// finish stops the daemon and checks that nothing it started survives.
func (d *daemon) finish() {
	select {
	case <-d.exited:
	default:
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(stopTimeout):
			d.cmd.Process.Kill()
			<-d.exited
			d.t.Errorf("harnessd did not exit within %s of SIGTERM", stopTimeout)
		}
	}
	if left := waitNoMarked(d.Marker, goneTimeout); len(left) > 0 {
		d.t.Errorf("processes left behind by the daemon: %s", describe(left))
		for _, p := range left {
			syscall.Kill(p.Pid, syscall.SIGKILL)
		}
	}
	if d.t.Failed() {
		d.t.Logf("harnessd log:\n%s", d.log.String())
	}
}

// Tree returns the live processes the daemon started (carrying its marker),
// not the daemon itself.
func (d *daemon) Tree() []proc {
	var out []proc
	for _, p := range markedProcs(d.Marker) {
		if p.Pid != d.Pid() {
			out = append(out, p)
		}
	}
	return out
}

// WaitTreeEmpty waits until the daemon has no live descendants.
func (d *daemon) WaitTreeEmpty() {
	d.t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		left := d.Tree()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the daemon's processes did not end: %s", describe(left))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitTree waits until the daemon has a live process whose command line
// contains want, and returns it.
func (d *daemon) WaitTree(want string) proc {
	d.t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		for _, p := range d.Tree() {
			if strings.Contains(p.Cmdline, want) {
				return p
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no process of the daemon runs %q: %s", want, describe(d.Tree()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitLog waits until one line of the daemon's log contains every one of
// subs (the log reaches the test through a pipe, a little later).
func (d *daemon) WaitLog(subs ...string) {
	d.t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		for _, line := range strings.Split(d.Log(), "\n") {
			ok := true
			for _, s := range subs {
				ok = ok && strings.Contains(line, s)
			}
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no log line with %q", subs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Health returns GET /health.
func (d *daemon) Health() map[string]any {
	d.t.Helper()
	code, body := d.Do("GET", "/health", "", nil)
	if code != http.StatusOK {
		d.t.Fatalf("/health: HTTP %d %v", code, body)
	}
	return body.(map[string]any)
}

// Sessions returns /health's active_sessions.
func (d *daemon) Sessions() int {
	d.t.Helper()
	n, ok := d.Health()["active_sessions"].(float64)
	if !ok {
		d.t.Fatalf("/health has no numeric active_sessions: %v", d.Health())
	}
	return int(n)
}

// WaitSessions waits until /health reports n active sessions.
func (d *daemon) WaitSessions(n int) {
	d.t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		got := d.Sessions()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("active_sessions stayed %d, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Do makes an HTTP request with an optional JSON body and headers (pairs of
// name, value) and decodes a JSON answer (nil when not JSON).
func (d *daemon) Do(method, path, body string, header map[string]string) (int, any) {
	d.t.Helper()
	code, raw := d.DoRaw(method, path, body, header)
	var v any
	if json.Unmarshal(raw, &v) != nil {
		v = nil
	}
	return code, v
}

// DoRaw is Do without decoding.
func (d *daemon) DoRaw(method, path, body string, header map[string]string) (int, []byte) {
	d.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), frameTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, rd)
	if err != nil {
		d.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// obj asserts v is a JSON object.
func obj(t testing.TB, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: want a JSON object, got %T %v", what, v, v)
	}
	return m
}
