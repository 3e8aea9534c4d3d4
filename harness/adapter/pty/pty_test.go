package pty

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

const (
	tuiPrompt  = `testharness> `
	bashPrompt = `bash-pty> `
)

func launch(t *testing.T, opts map[string]any, env map[string]string, command ...string) *harness.Launch {
	t.Helper()
	l := adaptertest.Launch(t, command...)
	l.Env, l.Options = process.DefaultEnviron(env), opts
	l.StartupTimeout = 20 * time.Second
	return l
}

func start(t *testing.T, l *harness.Launch) *Adapter {
	t.Helper()
	a := New()
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop(context.Background()) })
	return a
}

// tui starts the test double's TUI.
func tui(t *testing.T, opts map[string]any, args ...string) *Adapter {
	t.Helper()
	if opts == nil {
		opts = map[string]any{}
	}
	if _, ok := opts["prompt"]; !ok {
		opts["prompt"] = tuiPrompt
	}
	cmd := append([]string{testbin.Path(t, "testharness"), "agent", "--protocol", "tui"}, args...)
	return start(t, launch(t, opts, nil, cmd...))
}

// bash starts an interactive bash with a known prompt.
func bash(t *testing.T, opts map[string]any) *Adapter {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		testbin.Missing(t, "bash is not installed: the pty tests against a real shell need it")
	}
	if opts == nil {
		opts = map[string]any{}
	}
	opts["prompt"] = bashPrompt
	env := map[string]string{"PS1": bashPrompt, "PS2": "> ", "HISTFILE": "/dev/null"}
	return start(t, launch(t, opts, env, "bash", "--norc", "--noprofile", "-i"))
}

// collected is a turn's events.
type collected struct{ adaptertest.Events }

func (c *collected) text() string {
	var parts []string
	for _, e := range c.All() {
		if e.Type != wire.EventTextOutput {
			panic("unexpected event " + e.String())
		}
		parts = append(parts, e.Data.(*wire.TextOutput).Text)
	}
	return strings.Join(parts, "\n")
}

func turnCtx(t *testing.T, ctx context.Context, a *Adapter, n int, msg string, limit int64) (harness.TurnResult, *collected, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var c collected
	res, err := a.Turn(ctx, harness.TurnInput{Number: n, Message: msg, OutputLimit: limit}, c.Emit)
	return res, &c, err
}

func turn(t *testing.T, a *Adapter, n int, msg string) (harness.TurnResult, *collected) {
	t.Helper()
	res, c, err := turnCtx(t, context.Background(), a, n, msg, 1<<20)
	if err != nil {
		t.Fatalf("turn %d %q: %v", n, msg, err)
	}
	return res, c
}

// expect checks a turn's response and how it ended.
func expect(t *testing.T, res harness.TurnResult, response, end string) {
	t.Helper()
	if res.Response != response || res.Extra["turn_end"] != end {
		t.Fatalf("response %q ended by %v; want %q ended by %s", res.Response, res.Extra["turn_end"], response, end)
	}
}

func failure(t *testing.T, err error) *harness.Failure {
	t.Helper()
	f, ok := harness.AsFailure(err)
	if !ok {
		t.Fatalf("error %v is not a Failure", err)
	}
	return f
}

func TestTUIMultiTurn(t *testing.T) {
	a := tui(t, nil)
	res, c := turn(t, a, 1, "reply hello;;sleep 0.3;;reply world")
	expect(t, res, "hello\nworld", EndPrompt)
	// The banner printed before ready opens the first turn; the echo of
	// the message is dropped; spinner frames and colours leave no trace.
	if got := c.text(); got != "testharness tui — type a message, Ctrl-C interrupts, Ctrl-D quits\nhello\nworld" {
		t.Fatalf("events %q", got)
	}
	res, c = turn(t, a, 2, "history")
	expect(t, res, "history: reply hello;;sleep 0.3;;reply world | history", EndPrompt)
	if c.text() != res.Response {
		t.Fatalf("events %q differ from response %q", c.text(), res.Response)
	}
	if res.Cancelled || !a.Alive() {
		t.Fatal("cancelled or dead")
	}
}

func TestTUIColouredToolOutputStripped(t *testing.T) {
	a := tui(t, nil)
	res, _ := turn(t, a, 1, `think pondering;;tool add {"a":1};;error bad thing;;reply done`)
	want := "pondering\n⚙ add {\"a\":1}\n↳ no MCP bridge configured\nadd failed: no MCP bridge configured\nerror: bad thing\ndone"
	expect(t, res, want, EndPrompt)
	if strings.ContainsAny(res.Response, "\x1b\r") {
		t.Fatalf("control characters left: %q", res.Response)
	}
}

func TestTUIBracketedPaste(t *testing.T) {
	a := tui(t, nil)
	res, _ := turn(t, a, 1, "reply one\nreply two")
	expect(t, res, "one\ntwo", EndPrompt)
	res, _ = turn(t, a, 2, "history")
	expect(t, res, "history: reply one\nreply two | history", EndPrompt)
}

func TestTUIStripEchoOff(t *testing.T) {
	a := tui(t, map[string]any{"strip_echo": false})
	res, _ := turn(t, a, 1, "reply hi")
	expect(t, res, "testharness> reply hi\nhi", EndPrompt)
}

func TestTUIQuietEnd(t *testing.T) {
	a := tui(t, map[string]any{"quiet": "700ms"})
	res, _ := turn(t, a, 1, "reply loud;;nocomplete")
	expect(t, res, "loud", EndQuiet)
	// Typing works without a prompt; the prompt ends the next turn again.
	res, _ = turn(t, a, 2, "reply back")
	expect(t, res, "back", EndPrompt)
}

func TestTUIQuietOnly(t *testing.T) {
	// No prompt pattern: ready after the first quiet period, every turn
	// ends by quiet; the prompt is gone after the first turn.
	l := launch(t, map[string]any{"quiet": "700ms"}, nil,
		testbin.Path(t, "testharness"), "agent", "--protocol", "tui", "--no-prompt-after", "1")
	a := start(t, l)
	res, _ := turn(t, a, 1, "reply first")
	expect(t, res, "first", EndQuiet)
	res, _ = turn(t, a, 2, "reply second")
	expect(t, res, "second", EndQuiet)
}

func (a *Adapter) turnRunning() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

// interrupt runs msg as a turn and interrupts it once ready() holds.
func interrupt(t *testing.T, a *Adapter, n int, msg string, ready func() bool) harness.TurnResult {
	t.Helper()
	type out struct {
		res harness.TurnResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := a.Turn(ctx, harness.TurnInput{Number: n, Message: msg}, func(wire.Event) {})
		done <- out{res, err}
	}()
	for !ready() {
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || !o.res.Cancelled {
		t.Fatalf("interrupted turn: %+v %v", o.res, o.err)
	}
	return o.res
}

func TestTUIInterrupt(t *testing.T) {
	a := tui(t, nil)
	// The interrupt may come before the message is typed: it is held.
	res := interrupt(t, a, 1, "sleep 30s", a.turnRunning)
	expect(t, res, "^C", EndPrompt)
	res, _ = turn(t, a, 2, "reply still here")
	expect(t, res, "still here", EndPrompt)
	if res.Cancelled {
		t.Fatal("next turn cancelled")
	}
}

func TestTUICrashMidTurn(t *testing.T) {
	a := tui(t, nil)
	_, _, err := turnCtx(t, context.Background(), a, 1, "crash 3", 1<<20)
	f := failure(t, err)
	if f.Type != wire.FailureHarnessCrashed || f.Exit == nil || f.Exit.Code != 3 ||
		!strings.Contains(f.StderrTail, "fatal: crashing with code 3") || strings.Contains(f.StderrTail, "\x1b") {
		t.Fatalf("%#v", f)
	}
	if a.Alive() {
		t.Fatal("alive after crash")
	}
	_, _, err = turnCtx(t, context.Background(), a, 2, "reply x", 1<<20)
	if f := failure(t, err); f.Type != wire.FailureHarnessExited {
		t.Fatalf("turn after crash: %v", err)
	}
}

func TestTUIOutputLimit(t *testing.T) {
	a := tui(t, nil)
	_, _, err := turnCtx(t, context.Background(), a, 1, "flood 2M", 256<<10)
	if f := failure(t, err); f.Type != wire.FailureOutputLimit {
		t.Fatalf("%v", err)
	}
}

func TestTUITurnDeadline(t *testing.T) {
	a := tui(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := turnCtx(t, ctx, a, 1, "hang", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline", err)
	}
}

func TestTUIStartupFailures(t *testing.T) {
	th := testbin.Path(t, "testharness")
	l := launch(t, map[string]any{"prompt": tuiPrompt}, nil, th, "agent", "--protocol", "tui", "--crash-on-start", "4", "--stderr", "no api key")
	err := New().Start(context.Background(), l)
	f := failure(t, err)
	if f.Type != wire.FailureStartupFailed || f.Exit == nil || f.Exit.Code != 4 || !strings.Contains(f.StderrTail, "no api key") {
		t.Fatalf("%#v", f)
	}
	l = launch(t, map[string]any{"prompt": tuiPrompt}, nil, th, "agent", "--protocol", "tui", "--never-ready")
	l.StartupTimeout = 300 * time.Millisecond
	err = New().Start(context.Background(), l)
	if f := failure(t, err); f.Type != wire.FailureStartupFailed || !strings.Contains(f.Message, "did not become ready") ||
		!strings.Contains(f.StderrTail, "testharness tui") {
		t.Fatalf("%#v", f)
	}
	l = launch(t, map[string]any{"prompt": "("}, nil, th, "agent", "--protocol", "tui")
	if f := failure(t, New().Start(context.Background(), l)); f.Type != wire.FailureStartupFailed {
		t.Fatalf("bad options: %v", f)
	}
	if l.Supervisor.Live() != 0 {
		t.Fatal("process left after failed starts")
	}
}

func TestTUIReadyPattern(t *testing.T) {
	l := launch(t, map[string]any{"prompt": tuiPrompt, "ready": `type a message`}, nil,
		testbin.Path(t, "testharness"), "agent", "--protocol", "tui", "--slow-start", "200ms")
	a := start(t, l)
	// Ready came with the banner, before the prompt: the prompt arrives
	// between turns and is not mistaken for the end of turn 1.
	res, _ := turn(t, a, 1, "reply after banner")
	expect(t, res, "after banner", EndPrompt)
}

func TestTUITerminalSize(t *testing.T) {
	a := tui(t, map[string]any{"rows": 30, "cols": 100})
	res, _ := turn(t, a, 1, "size")
	expect(t, res, "size: 30x100", EndPrompt)
	if err := a.Resize(50, 132); err != nil {
		t.Fatal(err)
	}
	res, _ = turn(t, a, 2, "size")
	expect(t, res, "size: 50x132", EndPrompt)
}

func TestBashMultiTurn(t *testing.T) {
	a := bash(t, nil)
	res, _ := turn(t, a, 1, "echo $((6*7))")
	expect(t, res, "42", EndPrompt)
	res, _ = turn(t, a, 2, "X='it''s here'")
	expect(t, res, "", EndPrompt)
	res, _ = turn(t, a, 3, `echo "$X"`)
	expect(t, res, "its here", EndPrompt)
	res, _ = turn(t, a, 4, `printf '\033[1;31mred\033[0m and \033[32mgreen\033[0m\n'`)
	expect(t, res, "red and green", EndPrompt)
	res, _ = turn(t, a, 5, "echo one\necho two")
	expect(t, res, "one\ntwo", EndPrompt)
}

func TestBashResize(t *testing.T) {
	a := bash(t, map[string]any{"rows": 24, "cols": 80})
	res, _ := turn(t, a, 1, "stty size")
	expect(t, res, "24 80", EndPrompt)
	if err := a.Resize(50, 132); err != nil {
		t.Fatal(err)
	}
	res, _ = turn(t, a, 2, "stty size")
	expect(t, res, "50 132", EndPrompt)
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
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

// foregroundChild reports whether a child of pid runs comm as the
// terminal's foreground process group (where Ctrl-C sends SIGINT).
func foregroundChild(pid int, comm string) bool {
	for _, c := range children(pid) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(c) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		// After the name: state ppid pgrp session tty_nr tpgid ...
		f := strings.Fields(s[end+1:])
		if s[open+1:end] == comm && len(f) > 5 && f[2] == f[5] {
			return true
		}
	}
	return false
}

func TestBashInterrupt(t *testing.T) {
	a := bash(t, nil)
	_, _, pid := a.Diagnostics()
	res := interrupt(t, a, 1, "sleep 30", func() bool { return foregroundChild(pid, "sleep") })
	if !strings.Contains(res.Response, "^C") || res.Extra["turn_end"] != EndPrompt {
		t.Fatalf("interrupted: %+v", res)
	}
	res, _ = turn(t, a, 2, "echo after")
	expect(t, res, "after", EndPrompt)
	if len(children(pid)) != 0 {
		t.Fatal("sleep still running")
	}
}

// alive reports whether pid exists and is not a zombie.

func TestBashStopKillsSession(t *testing.T) {
	a := bash(t, nil)
	_, _, shell := a.Diagnostics()
	res, _ := turn(t, a, 1, "sleep 1000 & echo JOB=$!")
	i := strings.Index(res.Response, "JOB=")
	if i < 0 {
		t.Fatalf("no job pid in %q", res.Response)
	}
	job, err := strconv.Atoi(strings.Fields(res.Response[i+4:])[0])
	if err != nil || !adaptertest.Alive(job) {
		t.Fatalf("job %d not running (%v)", job, err)
	}
	// The job has its own process group (job control), in bash's session.
	if pg, _ := unix.Getpgid(job); pg == shell {
		t.Fatalf("job %d shares the shell's group", job)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if adaptertest.Alive(shell) || adaptertest.Alive(job) {
		t.Fatalf("left running: shell %v, job %v", adaptertest.Alive(shell), adaptertest.Alive(job))
	}
	if a.Alive() {
		t.Fatal("adapter alive after stop")
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal("second stop:", err)
	}
}

func TestBashExitMidTurn(t *testing.T) {
	a := bash(t, nil)
	_, _, err := turnCtx(t, context.Background(), a, 1, "exit 3", 0)
	f := failure(t, err)
	if f.Type != wire.FailureHarnessCrashed || f.Exit == nil || f.Exit.Code != 3 {
		t.Fatalf("%#v", f)
	}
}

func TestPythonREPL(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testbin.Missing(t, "python3 is not installed: the pty test against its REPL needs it")
	}
	l := launch(t, map[string]any{"prompt": `>>> `, "bracketed_paste": false}, nil, "python3", "-q", "-i")
	a := start(t, l)
	res, _ := turn(t, a, 1, "x = 6 * 7")
	expect(t, res, "", EndPrompt)
	res, _ = turn(t, a, 2, "print(x, end='')")
	expect(t, res, "42", EndPrompt)
	res, _ = turn(t, a, 3, `print("\x1b[34mblue\x1b[0m", x)`)
	expect(t, res, "blue 42", EndPrompt)
	res, _ = turn(t, a, 4, "1/0")
	if !strings.Contains(res.Response, "ZeroDivisionError") {
		t.Fatalf("traceback missing: %q", res.Response)
	}
}

func TestRestartAfterStop(t *testing.T) {
	l := launch(t, map[string]any{"prompt": tuiPrompt}, nil, testbin.Path(t, "testharness"), "agent", "--protocol", "tui")
	a := start(t, l)
	turn(t, a, 1, "reply first episode")
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	res, c := turn(t, a, 1, "history")
	expect(t, res, "history: history", EndPrompt)
	if !strings.HasPrefix(c.text(), "testharness tui") {
		t.Fatalf("banner of the new episode missing: %q", c.text())
	}
}

func TestHarnessReceivesEpisodeAndWorkspace(t *testing.T) {
	// Wide enough that the workspace path does not wrap.
	opts := map[string]any{"prompt": tuiPrompt, "cols": 1000}
	l := launch(t, opts, nil, testbin.Path(t, "testharness"), "agent", "--protocol", "tui")
	l.EpisodeID = "ep-pty-env"
	a := start(t, l)
	msg, _ := adaptertest.EnvProbe(l)
	res, c := turn(t, a, 1, msg)
	adaptertest.CheckEnv(t, l, res.Response+"\n"+c.text())
}
