// Package streamjson is the fake agent's Claude Code front end ("--protocol
// stream-json"): Claude Code's stream-json protocol (`claude -p
// --input-format stream-json --output-format stream-json --verbose`, which
// Qwen Code also speaks) over stdin and stdout, with the flags those agents
// take (Flags) and directives of its own (API errors, agent limits,
// permission requests), driven by testharness/agent's directive executor.
// It is what harness/adapter/streamjson is tested against.
//
// It owns Claude's side of the conversation only: the control protocol,
// the lines of a turn, --mcp-config and the mcp__server__tool naming; the
// directives of the common grammar are the executor's. Like the rest of the
// fake agent it must not import harnessd's own packages: it plays a foreign
// program.
package streamjson

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/harnessd/harnessd/testharness/agent"
	"github.com/harnessd/harnessd/testharness/agent/frontend"
)

// Options are the stream-json front end's settings: the common start-up
// behaviours and Claude's flags.
type Options struct {
	frontend.Options
	Flags Flags
}

// streamAgent is one run of the stream-json front end: a Claude Code
// compatible agent (`claude -p --input-format stream-json --output-format
// stream-json --verbose`) driven by the directive Executor.
type streamAgent struct {
	flags   *Flags
	out     *frontend.LineWriter
	stderr  io.Writer
	session string
	model   string
	mode    string // permission mode reported in system/init
	tools   *streamTools

	mu         sync.Mutex
	cancelTurn context.CancelFunc
	waiting    map[string]chan controlReply // our control requests (can_use_tool)
	reqSeq     int

	turn *streamTurn // the running turn; touched by the turn goroutine only

	exe    *agent.Executor
	queued int // user lines taken into the running turn (--queue-mid-turn)
}

// streamTurn is what a turn accumulates for its result line.
type streamTurn struct {
	start     time.Time
	toolCalls int
	toolUse   string // tool_use id of the call in flight
	apiStatus int    // set by apierror
	apiText   string
	limit     string // error_max_turns / error_max_budget_usd
	limitMsg  string
}

// controlReply is the response part of a control_response line.
type controlReply struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// streamInbound is one stdin line.
type streamInbound struct {
	Type      string          `json:"type"`
	Message   json.RawMessage `json:"message"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`
}

// Run runs the agent over Claude Code's stream-json protocol until
// stdin ends and returns the process exit code. See testharness/README.md.
func Run(opts Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	flags := &opts.Flags
	if code, exit := frontend.Start(opts.Options, stderr); exit {
		return code
	}
	if err := flags.check(); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	servers, err := parseMCPConfigs(flags.MCPConfig)
	if err != nil {
		fmt.Fprintln(stderr, "Error: Invalid MCP configuration:", err)
		return 1
	}
	out := frontend.NewLineWriter(stdout)
	if opts.NoisyStart {
		out.Line([]byte("testharness agent starting (not JSON)"))
	}
	time.Sleep(opts.SlowStart)
	if opts.NeverReady {
		select {}
	}

	a := &streamAgent{
		flags:   flags,
		out:     out,
		stderr:  stderr,
		session: flags.SessionID,
		model:   flags.Model,
		mode:    flags.PermissionMode,
		waiting: map[string]chan controlReply{},
	}
	if a.session == "" {
		a.session = newUUID()
	}
	if a.model == "" {
		a.model = "testharness-model"
	}
	if a.mode == "" {
		a.mode = flags.ApprovalMode
	}
	if a.mode == "" {
		a.mode = "default"
	}
	exe := &agent.Executor{Directives: a.directives()}
	a.exe = exe
	if len(servers) > 0 {
		a.tools = newStreamTools(servers, opts.MCPProtocol, a)
		defer a.tools.close()
		exe.Tools = a.tools
	}

	msgs := make(chan string, 64)
	go a.readInput(stdin, msgs)
	for text := range msgs {
		ctx, cancel := context.WithCancel(context.Background())
		a.mu.Lock()
		a.cancelTurn = cancel
		a.mu.Unlock()
		a.turn = &streamTurn{start: time.Now()}
		a.systemInit(ctx)
		res := exe.RunTurn(ctx, text, streamSink{a})
		a.mu.Lock()
		a.cancelTurn = nil
		queued := a.queued
		a.queued = 0
		a.mu.Unlock()
		cancel()
		if a.turn.apiStatus != 0 {
			// Claude Code ends the turn with an error result and exits 1.
			a.apiErrorResult()
			out.Close()
			return 1
		}
		if res.CloseOut {
			out.Close()
		}
		if !res.NoComplete {
			a.result(text, res)
			for range queued { // one result line per user line
				a.result(text, res)
			}
		}
		if res.ExitAfter != nil {
			out.Close()
			return *res.ExitAfter
		}
	}
	out.Close()
	return 0
}

// readInput reads stdin lines: user messages are queued for the turn loop,
// control requests are answered at once, control responses are routed to
// the turn waiting for them.
func (a *streamAgent) readInput(stdin io.Reader, msgs chan<- string) {
	defer close(msgs)
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var in streamInbound
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			fmt.Fprintf(a.stderr, "error: bad input line: %v\n", err)
			continue
		}
		switch in.Type {
		case "user":
			text, err := userText(in.Message)
			if err != nil {
				fmt.Fprintf(a.stderr, "error: bad user message: %v\n", err)
				continue
			}
			if a.takeMidTurn(text) {
				continue
			}
			msgs <- text
		case "control_request":
			a.control(in.RequestID, in.Request)
		case "control_response":
			var r controlReply
			if err := json.Unmarshal(in.Response, &r); err != nil {
				fmt.Fprintf(a.stderr, "error: bad control_response: %v\n", err)
				continue
			}
			a.mu.Lock()
			ch := a.waiting[r.RequestID]
			delete(a.waiting, r.RequestID)
			a.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		default:
			fmt.Fprintf(a.stderr, "error: unknown input type %q\n", in.Type)
		}
	}
}

// userText extracts the text of a user message: a string, or the text
// blocks of a content-block array joined by newlines.
func userText(raw json.RawMessage) (string, error) {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", err
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return "", fmt.Errorf("content is neither a string nor content blocks")
	}
	text := ""
	for _, b := range blocks {
		if b.Type == "text" {
			if text != "" {
				text += "\n"
			}
			text += b.Text
		}
	}
	return text, nil
}

// control answers a control request from the host.
func (a *streamAgent) control(id string, raw json.RawMessage) {
	var req struct {
		Subtype string `json:"subtype"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		a.controlResponse(id, nil, "invalid control request: "+err.Error())
		return
	}
	switch req.Subtype {
	case "initialize":
		if a.flags.NoInitialize {
			return // like an agent that does not know the request
		}
		a.controlResponse(id, map[string]any{
			"commands": []any{}, "output_style": "default", "available_output_styles": []string{"default"},
			"models": []any{}, "account": map[string]any{}, "pid": os.Getpid(),
		}, "")
	case "interrupt":
		// Answer first, then end the turn: the host sees the response before
		// the turn's error_during_execution result.
		a.controlResponse(id, map[string]any{}, "")
		a.mu.Lock()
		if a.cancelTurn != nil {
			a.cancelTurn()
		}
		a.mu.Unlock()
	default:
		a.controlResponse(id, nil, "Unsupported control request subtype: "+req.Subtype)
	}
}

func (a *streamAgent) controlResponse(id string, resp map[string]any, errMsg string) {
	r := map[string]any{"subtype": "success", "request_id": id}
	if errMsg != "" {
		r["subtype"], r["error"] = "error", errMsg
	} else {
		r["response"] = resp
	}
	a.out.JSON(map[string]any{"type": "control_response", "response": r})
}

// request sends a control request to the host and waits for its response.
func (a *streamAgent) request(ctx context.Context, req map[string]any) (controlReply, error) {
	a.mu.Lock()
	a.reqSeq++
	id := fmt.Sprintf("agent_req_%d", a.reqSeq)
	ch := make(chan controlReply, 1)
	a.waiting[id] = ch
	a.mu.Unlock()
	a.out.JSON(map[string]any{"type": "control_request", "request_id": id, "request": req})
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		a.mu.Lock()
		delete(a.waiting, id)
		a.mu.Unlock()
		return controlReply{}, ctx.Err()
	}
}

// systemInit writes the system/init line that opens every turn.
func (a *streamAgent) systemInit(ctx context.Context) {
	tools := []string{"Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write"}
	var servers []map[string]any
	if a.tools != nil {
		for _, s := range a.tools.status(ctx) {
			servers = append(servers, map[string]any{"name": s.name, "status": s.status})
			for _, t := range s.tools {
				tools = append(tools, "mcp__"+s.name+"__"+t)
			}
		}
	}
	wd, _ := os.Getwd()
	a.out.JSON(map[string]any{
		"type": "system", "subtype": "init", "cwd": wd, "session_id": a.session, "tools": tools,
		"mcp_servers": servers, "model": a.model, "permissionMode": a.mode, "apiKeySource": "none",
		"claude_code_version": "testharness", "output_style": "default", "uuid": newUUID(),
	})
}

// usage is a deterministic stand-in for Anthropic usage.
func usage(in, out int) map[string]any {
	return map[string]any{"input_tokens": in, "output_tokens": out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

// result writes the result line that ends a turn.
func (a *streamAgent) result(msg string, res agent.Outcome) {
	t := a.turn
	ms := time.Since(t.start).Milliseconds()
	r := map[string]any{
		"type": "result", "subtype": "success", "is_error": false, "api_error_status": nil,
		"duration_ms": ms, "duration_api_ms": ms, "num_turns": 1 + t.toolCalls,
		"session_id": a.session, "total_cost_usd": 0.0001 * float64(1+t.toolCalls),
		"usage": usage(len(msg), len(res.Response)),
		"modelUsage": map[string]any{a.model: map[string]any{
			"inputTokens": len(msg), "outputTokens": len(res.Response), "costUSD": 0.0001 * float64(1+t.toolCalls)}},
		"permission_denials": []any{}, "uuid": newUUID(),
	}
	switch {
	case res.Cancelled:
		a.out.JSON(map[string]any{"type": "user", "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "text", "text": "[Request interrupted by user]"}}},
			"parent_tool_use_id": nil, "session_id": a.session, "uuid": newUUID()})
		r["subtype"], r["is_error"] = "error_during_execution", true
		r["errors"] = []string{"Request interrupted by user"}
	case t.limit != "":
		r["subtype"], r["is_error"] = t.limit, true
		r["errors"] = []string{t.limitMsg}
	default:
		r["result"] = res.Response
		r["stop_reason"] = "end_turn"
		r["terminal_reason"] = "completed"
	}
	a.out.JSON(r)
}

// apiErrorResult ends a turn the way Claude Code reports an LLM API error:
// result subtype success, but is_error true and api_error_status set.
func (a *streamAgent) apiErrorResult() {
	t := a.turn
	ms := time.Since(t.start).Milliseconds()
	a.out.JSON(map[string]any{
		"type": "result", "subtype": "success", "is_error": true, "api_error_status": t.apiStatus,
		"duration_ms": ms, "duration_api_ms": ms, "num_turns": 1 + t.toolCalls,
		"result": fmt.Sprintf("API Error: %d %s", t.apiStatus, t.apiText), "stop_reason": "stop_sequence",
		"session_id": a.session, "total_cost_usd": 0, "usage": usage(0, 0),
		"permission_denials": []any{}, "uuid": newUUID(),
	})
}

// newUUID returns a random version-4 UUID string.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// takeMidTurn takes a user line written during a running turn into that
// turn (--queue-mid-turn): the executor gets its text (waitevent), and the
// turn answers it with a result line of its own. It reports whether it
// took the line.
func (a *streamAgent) takeMidTurn(text string) bool {
	if !a.flags.QueueMidTurn {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancelTurn == nil {
		return false
	}
	a.queued++
	a.exe.Deliver(text)
	return true
}
