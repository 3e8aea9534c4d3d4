package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// lineWriter writes whole lines to stdout under a lock.
type lineWriter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	closed bool
}

func (lw *lineWriter) line(b []byte) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.closed {
		return
	}
	lw.w.Write(b)
	lw.w.WriteByte('\n')
	lw.w.Flush()
}

func (lw *lineWriter) json(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	lw.line(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
}

func (lw *lineWriter) close() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.closed = true
	lw.w.Flush()
	if lw.closer != nil {
		lw.closer.Close()
	}
}

// jsonlSink maps executor output onto line protocol v1 events.
type jsonlSink struct {
	out    *lineWriter
	stderr io.Writer
}

func event(typ string, data map[string]any) map[string]any {
	return map[string]any{"type": typ, "timestamp": float64(time.Now().UnixNano()) / 1e9, "data": data}
}

func (s jsonlSink) Text(t string) { s.out.json(event("text_output", map[string]any{"text": t})) }
func (s jsonlSink) Thought(t string) {
	s.out.json(event("llm_chunk", map[string]any{"content": t, "index": 0, "thought": true}))
}
func (s jsonlSink) ToolCall(id, name string, args json.RawMessage) {
	s.out.json(event("tool_call", map[string]any{"tool_name": name, "arguments": args, "call_id": id}))
}
func (s jsonlSink) ToolResult(id, name, result string, isError bool) {
	var errv any
	if isError {
		errv = result
	}
	s.out.json(event("tool_result", map[string]any{"tool_name": name, "result": result, "error": errv, "call_id": id}))
}
func (s jsonlSink) Error(msg string, recoverable bool) {
	s.out.json(event("error", map[string]any{"message": msg, "recoverable": recoverable}))
}
func (s jsonlSink) Raw(line string) { s.out.line([]byte(line)) }
func (s jsonlSink) Stderr(t string) { io.WriteString(s.stderr, t) }

// inbound is one line from the daemon.
type inbound struct {
	Type    string `json:"type"`
	Turn    int    `json:"turn"`
	Content string `json:"content"`
}

// RunJSONL runs the agent over harnessd's line protocol v1 until stdin ends.
// It returns the process exit code.
func RunJSONL(opts Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	if opts.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if opts.StartupStderr != "" {
		fmt.Fprintln(stderr, opts.StartupStderr)
	}
	if opts.CrashOnStart != 0 {
		fmt.Fprintf(stderr, "fatal: crash on start (code %d)\n", opts.CrashOnStart)
		return opts.CrashOnStart
	}
	out := &lineWriter{w: bufio.NewWriterSize(stdout, 64<<10), closer: stdout}
	if opts.NoisyStart {
		out.line([]byte("testharness agent starting (not JSON)"))
	}
	time.Sleep(opts.SlowStart)
	if opts.NeverReady {
		select {}
	}

	exe := &Executor{Self: selfPath()}
	if url := os.Getenv("HARNESSD_MCP_URL"); url != "" {
		tools := &MCPTools{URL: url, Token: os.Getenv("HARNESSD_MCP_TOKEN"), ProtocolVersion: opts.MCPProtocol}
		defer tools.Close()
		exe.Tools = tools
	}
	sink := jsonlSink{out: out, stderr: stderr}

	// One reader goroutine: messages queue up, cancels reach the running turn.
	var (
		mu            sync.Mutex
		cancelTurn    context.CancelFunc
		turnNo        int
		pendingCancel int
	)
	msgs := make(chan inbound, 64)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			var in inbound
			if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
				sink.Error("bad input line: "+err.Error(), true)
				continue
			}
			switch in.Type {
			case "message":
				msgs <- in
			case "cancel":
				mu.Lock()
				if cancelTurn != nil && (in.Turn == 0 || in.Turn == turnNo) {
					cancelTurn()
				} else if in.Turn > turnNo {
					pendingCancel = in.Turn // the turn is queued, not started
				}
				mu.Unlock()
			default:
				sink.Error("unknown input type: "+in.Type, true)
			}
		}
	}()

	out.json(map[string]any{"type": "ready", "data": map[string]any{"agent": "testharness", "pid": os.Getpid()}})
	for in := range msgs {
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancelTurn, turnNo = cancel, in.Turn
		if pendingCancel != 0 && pendingCancel == in.Turn {
			cancel()
		}
		mu.Unlock()
		res := exe.RunTurn(ctx, in.Content, sink)
		mu.Lock()
		cancelTurn = nil
		mu.Unlock()
		cancel()
		if res.CloseOut {
			out.close()
		}
		if !res.NoComplete {
			data := map[string]any{"response": res.Response, "done": res.Done}
			if res.Cancelled {
				data["cancelled"] = true
			}
			out.json(event("turn_complete", data))
		}
		if res.ExitAfter != nil {
			out.close()
			return *res.ExitAfter
		}
	}
	out.close()
	return 0
}

func selfPath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}
