package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/testharness/mcptools"
)

type pider interface{ Pid() int }

// gone reports whether pid no longer exists (not even as a zombie).
func gone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

func TestCrashThenRestart(t *testing.T) {
	var rec recorder
	f := newFixture(t, rec.opts())
	c := connect(t, f.srv.URL(), f.srv.Token())
	if text, _ := call(t, c, "count", nil); text != "1" {
		t.Fatalf("count = %q", text)
	}
	pid := f.tools.(pider).Pid()
	text, isErr := call(t, c, "crash", map[string]any{"code": 3})
	if !isErr || !strings.Contains(text, "tool server 'tools' is not running") {
		t.Fatalf("crash = %q (isError %v), want a not-running error result", text, isErr)
	}
	text, isErr = call(t, c, "add", map[string]any{"a": 1, "b": 2})
	if !isErr || !strings.Contains(text, "is not running (exited with code 3)") {
		t.Fatalf("add after the crash = %q (isError %v)", text, isErr)
	}
	if _, ends := rec.snapshot(); !errors.Is(ends[len(ends)-1].Err, ErrNotRunning) {
		t.Fatalf("OnResult Err = %v, want ErrNotRunning", ends[len(ends)-1].Err)
	}
	// Other sources are unaffected.
	if _, err := f.cat.Call(testCtx(t), "grade", nil); err != nil {
		t.Fatalf("grade after the other source crashed: %v", err)
	}
	if err := f.tools.Restart(testCtx(t)); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if newPid := f.tools.(pider).Pid(); newPid == pid || newPid == 0 {
		t.Fatalf("pid after restart = %d (was %d)", newPid, pid)
	}
	if !gone(pid) {
		t.Fatalf("crashed upstream %d still exists", pid)
	}
	// Same bridge, same client: the new process answers (its counter
	// starts over).
	if text, isErr := call(t, c, "count", nil); text != "1" || isErr {
		t.Fatalf("count after restart = %q (isError %v), want 1 from a fresh process", text, isErr)
	}
	if text, _ := call(t, c, "add", map[string]any{"a": 1, "b": 2}); text != "3" {
		t.Fatalf("add after restart = %q", text)
	}
}

func TestStartIsIdempotentAndReplacesDeadUpstream(t *testing.T) {
	sup := newSup(t)
	src := startStdio(t, sup, toolsSpec(t, "tools"))
	pid := src.(pider).Pid()
	if err := src.Start(testCtx(t)); err != nil || src.(pider).Pid() != pid {
		t.Fatalf("second Start: %v, pid %d -> %d", err, pid, src.(pider).Pid())
	}
	if _, err := src.Call(testCtx(t), "crash", nil); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("crash: %v, want ErrNotRunning", err)
	}
	if err := src.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if src.(pider).Pid() == pid {
		t.Fatal("Start kept a dead upstream")
	}
	res, err := src.Call(testCtx(t), "echo", json.RawMessage(`{"text":"back"}`))
	if err != nil || resultText(res) != "back" {
		t.Fatalf("echo after Start: %q %v", resultText(res), err)
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	f := newFixture(t, ServerOptions{})
	pid := f.tools.(pider).Pid()
	stats := waitStats(t, f.cat, func(mcptools.Stats) bool { return true })
	if stats.PID != pid {
		t.Fatalf("upstream reports pid %d, source says %d", stats.PID, pid)
	}
	// Closing the server leaves the sources to their owner.
	if err := f.srv.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if gone(pid) {
		t.Fatal("Server.Close stopped an upstream it does not own")
	}
	graderPid := f.grader.(pider).Pid()
	for _, src := range []Source{f.tools, f.grader} {
		if err := src.Close(testCtx(t)); err != nil {
			t.Fatalf("close %s: %v", src.Name(), err)
		}
		if err := src.Close(testCtx(t)); err != nil {
			t.Fatalf("second close %s: %v", src.Name(), err)
		}
	}
	for _, p := range []int{pid, graderPid} {
		if !gone(p) {
			t.Fatalf("upstream %d still exists after Close", p)
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); err == nil {
			t.Fatalf("/proc/%d still exists", p)
		}
	}
	if n := f.sup.Live(); n != 0 {
		t.Fatalf("supervisor still tracks %d trees", n)
	}
	if _, err := f.tools.Call(testCtx(t), "echo", nil); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("call after Close: %v, want ErrNotRunning", err)
	}
	// A closed source can be started again.
	if err := f.tools.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tools.Call(testCtx(t), "echo", json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestStartFailures(t *testing.T) {
	sup := newSup(t)
	cases := []struct {
		name string
		spec StdioSpec
		want []string
	}{
		{"missing binary", StdioSpec{Name: "x", Command: []string{"/nonexistent/tool-server"}}, []string{"failed to spawn"}},
		{"empty command", StdioSpec{Name: "x"}, []string{"empty command"}},
		{"exits at once", toolsSpec(t, "x", "--no-such-flag"), []string{"start tool server 'x'", "exited with code 2", "stderr tail", "no-such-flag"}},
		{"never answers", StdioSpec{Name: "x", StartTimeout: 300 * time.Millisecond,
			Command: toolsSpec(t, "x").Command[:1:1]}, []string{"start tool server 'x'", "did not answer MCP's initialize within 300ms", "deadline exceeded"}},
	}
	cases[3].spec.Command = append(cases[3].spec.Command, "sleep", "1h")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := NewStdioSource(tc.spec, sup, testLog())
			err := src.Start(testCtx(t))
			if err == nil {
				src.Close(context.Background())
				t.Fatal("Start succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if src.(pider).Pid() != 0 || sup.Live() != 0 {
				t.Fatalf("a failed start left a process: pid %d, live %d", src.(pider).Pid(), sup.Live())
			}
		})
	}
}

func TestPaginatedList(t *testing.T) {
	sup := newSup(t)
	src := startStdio(t, sup, toolsSpec(t, "tools", "--page-size", "2"))
	tools, err := src.Tools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != strings.Join(mcptools.Names(), ",") {
		t.Fatalf("tools over pages = %v, want %v", names, mcptools.Names())
	}
}

func TestSourceCallTimeout(t *testing.T) {
	sup := newSup(t)
	spec := toolsSpec(t, "tools")
	spec.CallTimeout = 300 * time.Millisecond
	src := startStdio(t, sup, spec)
	_, err := src.Call(testCtx(t), "slow", json.RawMessage(`{"seconds":300}`))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("slow: %v, want ErrTimeout", err)
	}
	res, err := src.Call(testCtx(t), "echo", json.RawMessage(`{"text":"ok"}`))
	if err != nil || resultText(res) != "ok" {
		t.Fatalf("echo after a timeout: %q %v", resultText(res), err)
	}
}

func TestHungCallDoesNotBlockOthers(t *testing.T) {
	sup := newSup(t)
	src := startStdio(t, sup, toolsSpec(t, "tools"))
	ctx, cancel := context.WithCancel(testCtx(t))
	slowDone := make(chan error, 1)
	go func() {
		_, err := src.Call(ctx, "slow", json.RawMessage(`{"seconds":300}`))
		slowDone <- err
	}()
	waitFor(t, func() bool { return upstreamCalls(t, src, "slow") == 1 })
	for range 5 {
		res, err := src.Call(testCtx(t), "echo", json.RawMessage(`{"text":"meanwhile"}`))
		if err != nil || resultText(res) != "meanwhile" {
			t.Fatalf("echo during a hung call: %q %v", resultText(res), err)
		}
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the slow call ended early: %v", err)
	default:
	}
	cancel()
	if err := <-slowDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled slow call: %v", err)
	}
}

func TestRestartFailsCallsInFlight(t *testing.T) {
	sup := newSup(t)
	src := startStdio(t, sup, toolsSpec(t, "tools"))
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := src.Call(testCtx(t), "slow", json.RawMessage(`{"seconds":300}`))
		done <- outcome{res, err}
	}()
	// Wait until the call is running upstream.
	waitFor(t, func() bool { return upstreamCalls(t, src, "slow") == 1 })
	if err := src.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Either the old upstream answered while shutting down (its tools are
	// cancelled when its input closes) or it was gone: never a success.
	if o := <-done; !errors.Is(o.err, ErrNotRunning) && (o.err != nil || !o.res.IsError) {
		t.Fatalf("call in flight across a restart: %v %+v, want ErrNotRunning or an error result", o.err, o.res)
	}
	if n := upstreamCalls(t, src, "slow"); n != 0 {
		t.Fatalf("the new upstream saw %d slow calls", n)
	}
}

// TestStoppedUpstream freezes the upstream (SIGSTOP): calls time out, a
// write it never reads kills it, and Restart recovers.
func TestStoppedUpstream(t *testing.T) {
	sup := newSup(t)
	spec := toolsSpec(t, "tools")
	spec.CallTimeout = time.Second
	src := startStdio(t, sup, spec)
	pid := src.(pider).Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return stopped(pid) })
	if _, err := src.Call(testCtx(t), "echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrTimeout) {
		t.Fatalf("call to a stopped upstream: %v, want ErrTimeout", err)
	}
	// More than a pipe buffer of arguments: the write itself blocks.
	big := json.RawMessage(`{"text":"` + strings.Repeat("y", 1<<20) + `"}`)
	_, err := src.Call(testCtx(t), "echo", big)
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrNotRunning) {
		t.Fatalf("big call to a stopped upstream: %v", err)
	}
	waitFor(t, func() bool { return gone(pid) })
	if _, err := src.Call(testCtx(t), "echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("call after the kill: %v, want ErrNotRunning", err)
	}
	if err := src.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	res, err := src.Call(testCtx(t), "echo", json.RawMessage(`{"text":"back"}`))
	if err != nil || resultText(res) != "back" {
		t.Fatalf("echo after restart: %q, %v", resultText(res), err)
	}
}

// stopped reports whether every thread of pid is in the stopped state.
func stopped(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/stat")
		if err != nil {
			return false
		}
		// The state follows the parenthesised command name.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds (failing after a generous deadline).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// upstreamCalls returns how many calls of tool the upstream of src has seen.
func upstreamCalls(t *testing.T, src Source, tool string) int {
	res, err := src.Call(testCtx(t), "stats", nil)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	var s mcptools.Stats
	if err := json.Unmarshal([]byte(resultText(res)), &s); err != nil {
		t.Fatalf("stats %q: %v", resultText(res), err)
	}
	return s.Calls[tool]
}
