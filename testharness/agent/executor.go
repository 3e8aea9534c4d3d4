package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sink receives what a turn produces. Each front end maps it onto its wire
// protocol.
type Sink interface {
	Text(s string)
	Thought(s string)
	ToolCall(id, name string, args json.RawMessage)
	ToolResult(id, name, result string, isError bool)
	Error(msg string, recoverable bool)
	// Raw writes one raw stdout line, bypassing the protocol (fault tests).
	Raw(line string)
	Stderr(s string)
}

// ToolCaller calls environment tools; the production one speaks MCP.
type ToolCaller interface {
	List(ctx context.Context) ([]string, error)
	Call(ctx context.Context, name string, args json.RawMessage) (text string, isError bool, err error)
}

// Outcome is how a turn ended.
type Outcome struct {
	Response   string
	Done       bool // the task is declared complete
	Cancelled  bool // the turn was interrupted by a cancel request
	ExitAfter  *int // exit with this code after completing the turn
	NoComplete bool // do not send a turn-complete message
	CloseOut   bool // close stdout after the turn, but keep running
}

// DirectiveFunc runs a front end's own directive (one that only makes sense
// on its wire protocol); say emits text and adds it to the turn's response.
// It returns true to end the turn's directives early.
type DirectiveFunc func(ctx context.Context, arg string, say func(string)) (stop bool)

// Executor runs the directives of one conversation. It keeps the history of
// user messages so that multi-turn context can be checked.
type Executor struct {
	Tools ToolCaller
	Self  string // path of this binary, for spawning children (empty: this process's executable)
	// Directives are the front end's own verbs, beyond the common grammar.
	Directives map[string]DirectiveFunc
	history    []string
	inbox      inbox
	llm        llmConversation
	turns      int
	callSeq    int
	remembered *string // the remember directive's text
}

// RunTurn executes msg. A cancelled ctx interrupts interruptible directives
// (sleep) and ends the turn with Cancelled set.
func (e *Executor) RunTurn(ctx context.Context, msg string, sink Sink) Outcome {
	e.turns++
	e.history = append(e.history, msg)
	var out Outcome
	var texts []string
	say := func(s string) {
		sink.Text(s)
		texts = append(texts, s)
	}
directives:
	for _, d := range parseWith(msg, e.Directives) {
		if ctx.Err() != nil {
			out.Cancelled = true
			break
		}
		if f, ok := e.Directives[d.Verb]; ok && !verbs[d.Verb] {
			if f(ctx, d.Arg, say) {
				break directives
			}
			continue
		}
		switch d.Verb {
		case "echo":
			say("echo: " + d.Arg)
		case "reply", "say":
			say(d.Arg)
		case "think":
			sink.Thought(d.Arg)
		case "tool":
			name, args, _ := strings.Cut(d.Arg, " ")
			say(e.callTool(ctx, sink, name, strings.TrimSpace(args)))
		case "llm":
			say(e.callLLM(ctx, sink, d.Arg))
		case "llmenv":
			say(e.callLLM(ctx, sink, os.Getenv(d.Arg)))
		case "cat":
			b, err := os.ReadFile(d.Arg)
			if err != nil {
				sink.Error("cat: "+err.Error(), true)
				break
			}
			say(d.Arg + ": " + string(b))
		case "tools":
			if e.Tools == nil {
				sink.Error("no MCP bridge configured", true)
				break
			}
			names, err := e.Tools.List(ctx)
			if err != nil {
				sink.Error("list tools: "+err.Error(), true)
				break
			}
			say("tools: " + strings.Join(names, ", "))
		case "sleep":
			dur, err := parseDuration(d.Arg)
			if err != nil {
				sink.Error(err.Error(), true)
				break
			}
			t := time.NewTimer(dur)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				out.Cancelled = true
			}
		case "waitevent":
			// waitevent [D]: block until the environment delivers text
			// mid-turn (Deliver) and say it, or say "no event" after D.
			dur := defaultEventWait
			if d.Arg != "" {
				v, err := parseDuration(d.Arg)
				if err != nil {
					sink.Error(err.Error(), true)
					break
				}
				dur = v
			}
			if text, _ := e.waitEvent(ctx, dur); text != "" {
				say(text)
			} else if ctx.Err() != nil {
				out.Cancelled = true
			}
		case "waitfor":
			// waitfor PATH: block until PATH exists (a test's signal to end
			// the turn), or until the turn is cancelled.
			if !waitForFile(ctx, d.Arg) {
				out.Cancelled = true
			}
		case "hang":
			select {} // ignores cancel; only a signal ends it
		case "crash":
			code := atoiDefault(d.Arg, 1)
			sink.Stderr(fmt.Sprintf("fatal: crashing with code %d\n", code))
			os.Exit(code)
		case "exit":
			code := atoiDefault(d.Arg, 0)
			out.ExitAfter = &code
		case "stderr":
			sink.Stderr(d.Arg + "\n")
		case "flood":
			n, err := parseSize(d.Arg)
			if err != nil {
				sink.Error(err.Error(), true)
				break
			}
			line := strings.Repeat("x", 4095)
			for sent := 0; sent < n; sent += 4096 {
				if ctx.Err() != nil {
					break
				}
				sink.Raw(line)
			}
		case "lines":
			n, err := parseSize(d.Arg)
			if err != nil {
				sink.Error(err.Error(), true)
				break
			}
			floodLines(ctx, sink, n)
		case "longline":
			n, err := parseSize(d.Arg)
			if err != nil {
				sink.Error(err.Error(), true)
				break
			}
			sink.Raw(strings.Repeat("y", n))
		case "rawline":
			sink.Raw(d.Arg)
		case "garbage":
			sink.Raw("this is not json {{{")
		case "malformed":
			sink.Raw(`{"type":"text_output","data":`)
		case "badevent":
			sink.Raw(`{"type":"no_such_event","data":{"x":1}}`)
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
			say("ignoring SIGTERM")
		case "spawn":
			pid, err := e.startSleeper(false, strings.Contains(d.Arg, "ignore-term"))
			if err != nil {
				sink.Error(err.Error(), true)
				break
			}
			say(fmt.Sprintf("spawned %d", pid))
		case "escape":
			pid, err := e.startSleeper(true, strings.Contains(d.Arg, "ignore-term"))
			if err != nil {
				sink.Error(err.Error(), true)
				break
			}
			say(fmt.Sprintf("escaped %d", pid))
		case "orphan":
			pid, err := e.startOrphan(d.Arg)
			if err != nil {
				sink.Error(err.Error(), true)
				break
			}
			say(fmt.Sprintf("orphaned %d", pid))
		case "attack":
			say(attackLine(ctx, d.Arg))
		case "done":
			out.Done = true
		case "history":
			say("history: " + strings.Join(e.history, " | "))
		case "count":
			say(fmt.Sprintf("turns: %d", e.turns))
		case "remember":
			text := d.Arg
			e.remembered = &text
			say("remembered: " + text)
		case "recall":
			if e.remembered == nil {
				say("recall: nothing remembered")
			} else {
				say("recall: " + *e.remembered)
			}
		case "env":
			v, ok := os.LookupEnv(d.Arg)
			if !ok {
				v = "<unset>"
			}
			say(d.Arg + "=" + v)
		case "pwd":
			wd, _ := os.Getwd()
			say(wd)
		case "write":
			path, text, _ := strings.Cut(d.Arg, " ")
			err := os.MkdirAll(filepath.Dir(path), 0o755)
			if err == nil {
				err = os.WriteFile(path, []byte(text), 0o644)
			}
			if err != nil {
				sink.Error("write: "+err.Error(), true)
				break
			}
			say("wrote " + path)
		case "error":
			sink.Error(d.Arg, true)
		case "closeout":
			out.CloseOut = true
			out.NoComplete = true
		case "nocomplete":
			out.NoComplete = true
		}
	}
	out.Response = strings.Join(texts, "\n")
	if out.Response == "" && !out.Cancelled {
		out.Response = "ok"
	}
	return out
}

func (e *Executor) callTool(ctx context.Context, sink Sink, name, args string) string {
	e.callSeq++
	id := fmt.Sprintf("call_%d", e.callSeq)
	if args == "" {
		args = "{}"
	}
	raw := json.RawMessage(args)
	if !json.Valid(raw) {
		sink.Error(fmt.Sprintf("tool %s: arguments are not JSON: %s", name, args), true)
		return "bad arguments"
	}
	sink.ToolCall(id, name, raw)
	if e.Tools == nil {
		sink.ToolResult(id, name, "no MCP bridge configured", true)
		return name + " failed: no MCP bridge configured"
	}
	text, isErr, err := e.Tools.Call(ctx, name, raw)
	if err != nil {
		sink.ToolResult(id, name, err.Error(), true)
		return name + " failed: " + err.Error()
	}
	sink.ToolResult(id, name, text, isErr)
	if isErr {
		return name + " error: " + text
	}
	return name + " -> " + text
}

// waitForFile polls until path exists (true) or ctx ends (false).
func waitForFile(ctx context.Context, path string) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// startSleeper starts "testharness sleep" as a child, optionally in a new
// session (escaping the process group).
func (e *Executor) startSleeper(setsid, ignoreTerm bool) (int, error) {
	args := []string{"sleep"}
	if ignoreTerm {
		args = append(args, "--ignore-term")
	}
	args = append(args, "1h")
	cmd := exec.Command(e.self(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("spawn: %w", err)
	}
	pid := cmd.Process.Pid
	go cmd.Wait()
	return pid, nil
}

// startOrphan starts "testharness detach", which starts a setsid sleeper,
// prints its pid and exits, leaving the sleeper without a parent.
func (e *Executor) startOrphan(arg string) (int, error) {
	args := []string{"detach"}
	linger := false
	for _, a := range strings.Fields(arg) {
		switch {
		case a == "scrub":
			args = append(args, "--scrub")
		case strings.HasPrefix(a, "linger="):
			linger = true
			args = append(args, "--linger", strings.TrimPrefix(a, "linger="))
		default:
			return 0, fmt.Errorf("orphan: unknown option %q (want scrub, linger=D)", a)
		}
	}
	cmd := exec.Command(e.self(), args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("detach: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if linger {
		go cmd.Wait() // reaped when it exits, after the directive returned
	} else if werr := cmd.Wait(); werr != nil && err == nil {
		// Without linger the sleeper is an orphan once the directive returns.
		err = werr
	}
	if err != nil {
		return 0, fmt.Errorf("detach: %w", err)
	}
	return strconv.Atoi(strings.TrimSpace(line))
}

func atoiDefault(s string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		return n
	}
	return def
}

// SayFunc adapts a directive that only answers with text ("" says nothing)
// to a DirectiveFunc.
func SayFunc(f func(arg string) string) DirectiveFunc {
	return func(_ context.Context, arg string, say func(string)) bool {
		if s := f(arg); s != "" {
			say(s)
		}
		return false
	}
}
