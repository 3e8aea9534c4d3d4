// Package acp is the fake agent's Agent Client Protocol v1 front end
// ("--protocol acp"): JSON-RPC 2.0, one message per line over stdin and
// stdout, driven by testharness/agent's directive executor, with directives
// of its own (permission requests, client calls, raw session updates, RPC
// errors). It is what harness/adapter/acp is tested against.
//
// It owns the ACP side of the conversation only: set-up, the session, the
// prompt turn and the agent's own requests to the client; the directives of
// the common grammar are the executor's. Like the rest of the fake agent it
// must not import harnessd's own packages (internal/bearer aside, the
// header's spelling): it plays a foreign program.
package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/internal/bearer"
	"github.com/harnessd/harnessd/testharness/agent"
	"github.com/harnessd/harnessd/testharness/agent/frontend"
)

// Options are the acp front end's settings: the common start-up behaviours
// and its own.
type Options struct {
	frontend.Options
	IgnoreEOF bool   // keep running after stdin ends
	NoHTTP    bool   // advertise no http MCP support and refuse http servers
	Auth      string // require authenticate with this method id before session/new
	// PromptQueueing advertises agentCapabilities._meta.claudeCode.
	// promptQueueing (as claude-agent-acp does) and takes a session/prompt
	// that arrives during a turn into that turn: its text is delivered to
	// the turn (the waitevent directive), and it is answered end_turn when
	// the turn ends, before the turn's own prompt.
	PromptQueueing bool
}

// acpMessage is one JSON-RPC 2.0 message of the Agent Client Protocol.
type acpMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *acpError       `json:"error,omitempty"`
}

// acpError is a JSON-RPC error object.
type acpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *acpError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

// JSON-RPC and ACP error codes the fake agent uses.
const (
	acpParseError     = -32700
	acpMethodNotFound = -32601
	acpInvalidParams  = -32602
	acpInternalError  = -32603
	acpAuthRequired   = -32000
)

// acpModes are the session modes the fake agent offers.
var acpModes = []string{"default", "yolo"}

// acpAgent is the state of the fake ACP agent: what the client sent during
// set-up (reported by the "acp" directive), the one session, the running
// prompt, and the agent's own requests to the client awaiting answers.
type acpAgent struct {
	opts   Options
	out    *frontend.LineWriter
	stderr io.Writer

	mu        sync.Mutex
	initReq   json.RawMessage // initialize params
	newReq    json.RawMessage // session/new params
	session   string
	sessions  int
	mode      string
	authed    bool
	exe       *agent.Executor
	tools     *agent.MCPTools
	cancel    context.CancelFunc // the running prompt's
	turns     int
	nextID    int
	permSeq   int
	pending   map[string]chan acpMessage
	clientEOF bool
	inTurn    bool              // a prompt is running (PromptQueueing)
	queued    []json.RawMessage // ids of prompts taken into the running turn
}

// Run runs the agent as an Agent Client Protocol v1 agent: JSON-RPC 2.0,
// one message per line over stdin and stdout. It answers initialize,
// authenticate, session/new (whose http MCP server becomes the executor's
// tool bridge), session/set_mode and session/prompt (streaming the turn as
// session/update notifications), honours session/cancel, and asks the client
// for permissions or calls its methods when directives say so. It returns
// the process exit code.
func Run(opts Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int {
	if code, exit := frontend.Start(opts.Options, stderr); exit {
		return code
	}
	out := frontend.NewLineWriter(stdout)
	if opts.NoisyStart {
		out.Line([]byte("testharness acp agent starting (not JSON)"))
	}
	time.Sleep(opts.SlowStart)
	if opts.NeverReady {
		frontend.SleepForever()
	}

	a := &acpAgent{opts: opts, out: out, stderr: stderr, pending: map[string]chan acpMessage{}}
	defer a.closeTools()
	// The reader answers set-up requests and cancels at once; prompts run
	// one at a time here, so that cancels and answers reach a running one.
	prompts := make(chan acpMessage, 64)
	go a.read(stdin, prompts)
	for m := range prompts {
		if code := a.prompt(m); code != nil {
			out.Close()
			return *code
		}
	}
	if opts.IgnoreEOF {
		frontend.SleepForever() // like the Claude and Codex ACP adapters
	}
	out.Close()
	return 0
}

func isNullID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) == 0 || bytes.Equal(id, []byte("null"))
}

// read dispatches the client's messages until stdin ends.
func (a *acpAgent) read(stdin io.Reader, prompts chan<- acpMessage) {
	defer close(prompts)
	defer a.clientGone()
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m acpMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			a.reply(json.RawMessage("null"), nil, &acpError{Code: acpParseError, Message: "parse error: " + err.Error()})
			continue
		}
		switch {
		case m.Method == "":
			a.response(m)
		case isNullID(m.ID):
			a.notification(m)
		case m.Method == "session/prompt":
			if a.queueInto(m) {
				continue
			}
			prompts <- m
		default:
			result, err := a.handle(m.Method, m.Params)
			a.reply(m.ID, result, err)
		}
	}
}

// clientGone fails the agent's own requests still waiting for an answer.
func (a *acpAgent) clientGone() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clientEOF = true
	for id, ch := range a.pending {
		close(ch)
		delete(a.pending, id)
	}
}

func (a *acpAgent) response(m acpMessage) {
	key := string(bytes.TrimSpace(m.ID))
	a.mu.Lock()
	ch, ok := a.pending[key]
	delete(a.pending, key)
	a.mu.Unlock()
	if !ok {
		fmt.Fprintf(a.stderr, "acp: response to unknown id %s\n", key)
		return
	}
	ch <- m
}

func (a *acpAgent) notification(m acpMessage) {
	if m.Method != "session/cancel" {
		return
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancel != nil && p.SessionID == a.session {
		a.cancel()
	}
}

func (a *acpAgent) reply(id json.RawMessage, result any, e *acpError) {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		m["error"] = e
	} else {
		if result == nil {
			result = map[string]any{}
		}
		m["result"] = result
	}
	a.out.JSON(m)
}

func (a *acpAgent) notify(method string, params any) {
	a.out.JSON(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// call sends a request to the client and waits for its answer.
func (a *acpAgent) call(method string, params any) (json.RawMessage, error) {
	a.mu.Lock()
	if a.clientEOF {
		a.mu.Unlock()
		return nil, errors.New("client closed its side")
	}
	id := strconv.Itoa(a.nextID)
	a.nextID++
	ch := make(chan acpMessage, 1)
	a.pending[id] = ch
	a.mu.Unlock()
	a.out.JSON(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	m, ok := <-ch
	if !ok {
		return nil, errors.New("client closed its side")
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// handle answers the client's requests other than session/prompt.
func (a *acpAgent) handle(method string, params json.RawMessage) (any, *acpError) {
	switch method {
	case "initialize":
		return a.initialize(params)
	case "authenticate":
		var p struct {
			MethodID string `json:"methodId"`
		}
		if err := json.Unmarshal(params, &p); err != nil || a.opts.Auth == "" || p.MethodID != a.opts.Auth {
			return nil, &acpError{Code: acpInvalidParams, Message: fmt.Sprintf("unknown auth method %q", p.MethodID)}
		}
		a.mu.Lock()
		a.authed = true
		a.mu.Unlock()
		return map[string]any{}, nil
	case "session/new":
		return a.newSession(params)
	case "session/set_mode":
		var p struct {
			SessionID string `json:"sessionId"`
			ModeID    string `json:"modeId"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &acpError{Code: acpInvalidParams, Message: err.Error()}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if p.SessionID != a.session || a.session == "" {
			return nil, &acpError{Code: acpInvalidParams, Message: "unknown session " + p.SessionID}
		}
		for _, m := range acpModes {
			if m == p.ModeID {
				a.mode = m
				return map[string]any{}, nil
			}
		}
		return nil, &acpError{Code: acpInvalidParams, Message: "unknown mode " + p.ModeID}
	}
	return nil, &acpError{Code: acpMethodNotFound, Message: "method not found: " + method}
}

func (a *acpAgent) initialize(params json.RawMessage) (any, *acpError) {
	var p struct {
		ProtocolVersion *int `json:"protocolVersion"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.ProtocolVersion == nil {
		return nil, &acpError{Code: acpInvalidParams, Message: "initialize needs protocolVersion"}
	}
	a.mu.Lock()
	a.initReq = append(json.RawMessage(nil), params...)
	a.mu.Unlock()
	auth := []any{}
	if a.opts.Auth != "" {
		auth = append(auth, map[string]any{"id": a.opts.Auth, "name": "Test auth", "description": "accepts anything"})
	}
	return map[string]any{
		"protocolVersion": 1,
		"agentCapabilities": map[string]any{
			"loadSession":        false,
			"promptCapabilities": map[string]any{"image": false, "audio": false, "embeddedContext": false},
			"mcpCapabilities":    map[string]any{"http": !a.opts.NoHTTP, "sse": false},
			"_meta":              map[string]any{"claudeCode": map[string]any{"promptQueueing": a.opts.PromptQueueing}},
		},
		"authMethods": auth,
		"agentInfo":   map[string]any{"name": "testharness", "title": "testharness fake agent", "version": "1"},
	}, nil
}

// acpMCPServer is an McpServer entry of session/new (any variant).
type acpMCPServer struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	URL     string `json:"url"`
	Command string `json:"command"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
}

func (a *acpAgent) newSession(params json.RawMessage) (any, *acpError) {
	var p struct {
		Cwd        string          `json:"cwd"`
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &acpError{Code: acpInvalidParams, Message: err.Error()}
	}
	if isNullID(p.MCPServers) {
		return nil, &acpError{Code: acpInvalidParams, Message: "mcpServers is required"}
	}
	var servers []acpMCPServer
	if err := json.Unmarshal(p.MCPServers, &servers); err != nil {
		return nil, &acpError{Code: acpInvalidParams, Message: "mcpServers: " + err.Error()}
	}
	if !strings.HasPrefix(p.Cwd, "/") {
		return nil, &acpError{Code: acpInvalidParams, Message: "cwd must be absolute"}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opts.Auth != "" && !a.authed {
		return nil, &acpError{Code: acpAuthRequired, Message: "Authentication required"}
	}
	exe := &agent.Executor{}
	for _, s := range servers {
		switch s.Type {
		case "http":
			if a.opts.NoHTTP {
				return nil, &acpError{Code: acpInvalidParams, Message: "http MCP servers are not supported"}
			}
			if exe.Tools != nil {
				continue
			}
			tools := &agent.MCPTools{URL: s.URL, ProtocolVersion: a.opts.MCPProtocol}
			for _, h := range s.Headers {
				if tok, ok := bearer.Token(h.Value); ok && strings.EqualFold(h.Name, bearer.HeaderName) {
					tools.Token = tok
				}
			}
			if a.tools != nil {
				a.tools.Close()
			}
			a.tools = tools
			exe.Tools = tools
		case "":
			// stdio servers are recorded (see "acp new") but not started.
		default:
			return nil, &acpError{Code: acpInvalidParams, Message: "unsupported MCP server type " + s.Type}
		}
	}
	a.sessions++
	a.session = fmt.Sprintf("testharness-session-%d", a.sessions)
	a.mode = acpModes[0]
	a.exe = exe
	a.newReq = append(json.RawMessage(nil), params...)
	modes := make([]any, len(acpModes))
	for i, m := range acpModes {
		modes[i] = map[string]any{"id": m, "name": m}
	}
	return map[string]any{
		"sessionId": a.session,
		"modes":     map[string]any{"currentModeId": a.mode, "availableModes": modes},
	}, nil
}

func (a *acpAgent) closeTools() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tools != nil {
		a.tools.Close()
		a.tools = nil
	}
}

// prompt runs one session/prompt and answers it. It returns an exit code
// when a directive asked the agent to exit after the turn.
func (a *acpAgent) prompt(m acpMessage) *int {
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		a.reply(m.ID, nil, &acpError{Code: acpInvalidParams, Message: err.Error()})
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.mu.Lock()
	exe, sid := a.exe, a.session
	if exe == nil || p.SessionID != sid {
		a.mu.Unlock()
		a.reply(m.ID, nil, &acpError{Code: acpInvalidParams, Message: "unknown session " + p.SessionID})
		return nil
	}
	a.turns++
	turnNo := a.turns
	a.cancel = cancel
	a.inTurn = true
	a.mu.Unlock()

	var texts []string
	for _, b := range p.Prompt {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	msg := strings.Join(texts, "\n")
	t := &acpTurn{a: a, session: sid}
	exe.Directives = directives(a.verbs(t))
	res := exe.RunTurn(ctx, msg, t)
	a.mu.Lock()
	a.cancel = nil
	a.inTurn = false
	queued := a.queued
	a.queued = nil
	a.mu.Unlock()
	for _, id := range queued {
		a.reply(id, map[string]any{"stopReason": "end_turn", "_meta": map[string]any{"testharness": map[string]any{"queued_into": turnNo}}}, nil)
	}
	cancelled := res.Cancelled || ctx.Err() != nil
	if t.texts == 0 && !cancelled && res.Response != "" {
		t.Text(res.Response) // "ok": the line protocol's response of a silent turn
	}
	if res.CloseOut {
		a.out.Close()
	}
	if !res.NoComplete {
		if t.rpcErr != nil {
			a.reply(m.ID, nil, t.rpcErr)
		} else {
			stop := "end_turn"
			if cancelled {
				stop = "cancelled"
			}
			a.reply(m.ID, map[string]any{
				"stopReason": stop,
				"usage": map[string]any{
					"inputTokens": len(msg), "outputTokens": t.outChars, "totalTokens": len(msg) + t.outChars,
				},
				"_meta": map[string]any{"testharness": map[string]any{"turn": turnNo}},
			}, nil)
		}
	}
	return res.ExitAfter
}

// verb is an acp-only directive; say emits text and adds it to the response.
type verb func(ctx context.Context, arg string, say func(string))

// directives adapts verbs to the executor's front-end directives.
func directives(vs map[string]verb) map[string]agent.DirectiveFunc {
	out := make(map[string]agent.DirectiveFunc, len(vs))
	for name, v := range vs {
		out[name] = func(ctx context.Context, arg string, say func(string)) bool {
			v(ctx, arg, say)
			return false
		}
	}
	return out
}

// verbs are the acp-only directives, bound to turn t.
func (a *acpAgent) verbs(t *acpTurn) map[string]verb {
	return map[string]verb{
		"permission": func(_ context.Context, arg string, say func(string)) {
			say(a.askPermission(t, arg))
		},
		"cancelperm": func(ctx context.Context, arg string, say func(string)) {
			<-ctx.Done() // wait for session/cancel, then ask anyway
			say(a.askPermission(t, arg))
		},
		"rpcerror": func(_ context.Context, arg string, _ func(string)) {
			e := &acpError{Code: acpInternalError, Message: "internal error"}
			code, msg, _ := strings.Cut(arg, " ")
			if n, err := strconv.Atoi(code); err == nil {
				e.Code = n
			} else {
				msg = arg
			}
			if msg = strings.TrimSpace(msg); msg != "" {
				e.Message = msg
			}
			t.rpcErr = e
		},
		"emptychunk": func(context.Context, string, func(string)) {
			t.update(map[string]any{
				"sessionUpdate": "agent_message_chunk",
				"content":       map[string]any{"type": "text", "text": ""},
				"_meta":         map[string]any{"usage": map[string]any{"inputTokens": 7, "outputTokens": 3}},
			})
		},
		"plan": func(_ context.Context, arg string, _ func(string)) {
			var entries []any
			for _, e := range strings.Split(arg, "|") {
				entries = append(entries, map[string]any{"content": strings.TrimSpace(e), "priority": "medium", "status": "pending"})
			}
			t.update(map[string]any{"sessionUpdate": "plan", "entries": entries})
		},
		"update": func(_ context.Context, arg string, _ func(string)) {
			var u map[string]any
			if err := json.Unmarshal([]byte(arg), &u); err != nil {
				t.Error("update: "+err.Error(), true)
				return
			}
			t.update(u)
		},
		"clientcall": func(_ context.Context, arg string, say func(string)) {
			method, params, _ := strings.Cut(arg, " ")
			p := map[string]any{}
			if params = strings.TrimSpace(params); params != "" {
				if err := json.Unmarshal([]byte(params), &p); err != nil {
					t.Error("clientcall: "+err.Error(), true)
					return
				}
			}
			p["sessionId"] = t.session
			res, err := a.call(method, p)
			if err != nil {
				say(method + ": " + err.Error())
				return
			}
			say(method + ": result " + compact(res))
		},
		"acp": func(_ context.Context, arg string, say func(string)) {
			a.mu.Lock()
			defer a.mu.Unlock()
			switch arg {
			case "init":
				say(compact(a.initReq))
			case "new":
				say(compact(a.newReq))
			case "mode":
				say("mode: " + a.mode)
			default:
				say("acp: unknown key " + arg)
			}
		},
	}
}

// askPermission sends session/request_permission for a tool titled title
// and describes the client's answer.
func (a *acpAgent) askPermission(t *acpTurn, title string) string {
	a.mu.Lock()
	a.permSeq++
	id := fmt.Sprintf("perm_%d", a.permSeq)
	a.mu.Unlock()
	res, err := a.call("session/request_permission", map[string]any{
		"sessionId": t.session,
		"toolCall": map[string]any{
			"toolCallId": id, "title": title, "kind": "execute", "status": "pending",
			"rawInput": map[string]any{"title": title},
		},
		"options": []any{
			map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
			map[string]any{"optionId": "allow_always", "name": "Always Allow", "kind": "allow_always"},
			map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
		},
	})
	if err != nil {
		return "permission " + title + ": " + err.Error()
	}
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "permission " + title + ": bad answer " + compact(res)
	}
	if r.Outcome.Outcome == "selected" {
		return "permission " + title + ": selected " + r.Outcome.OptionID
	}
	return "permission " + title + ": " + r.Outcome.Outcome
}

func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// acpTurn is the Sink of one prompt: executor output as session/update
// notifications.
type acpTurn struct {
	a        *acpAgent
	session  string
	texts    int
	outChars int
	rpcErr   *acpError
}

func (t *acpTurn) update(u map[string]any) {
	t.a.notify("session/update", map[string]any{"sessionId": t.session, "update": u})
}

// Text streams s as agent_message_chunks, one per word, so that clients
// must assemble the response. Texts after the first start with a newline.
func (t *acpTurn) Text(s string) {
	if t.texts > 0 {
		s = "\n" + s
	}
	t.texts++
	t.outChars += len(s)
	for _, w := range strings.SplitAfter(s, " ") {
		t.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": w}})
	}
}

func (t *acpTurn) Thought(s string) {
	t.update(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": s}})
}

func (t *acpTurn) ToolCall(id, name string, args json.RawMessage) {
	t.update(map[string]any{
		"sessionUpdate": "tool_call", "toolCallId": id, "title": name, "kind": "other",
		"status": "in_progress", "rawInput": args,
	})
}

func (t *acpTurn) ToolResult(id, _, result string, isError bool) {
	status := "completed"
	if isError {
		status = "failed"
	}
	t.update(map[string]any{
		"sessionUpdate": "tool_call_update", "toolCallId": id, "status": status,
		"content":   []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": result}}},
		"rawOutput": map[string]any{"text": result},
	})
}

// Error goes to stderr: ACP has no error notification.
func (t *acpTurn) Error(msg string, _ bool) { fmt.Fprintf(t.a.stderr, "error: %s\n", msg) }

func (t *acpTurn) Raw(line string) { t.a.out.Line([]byte(line)) }

func (t *acpTurn) Stderr(s string) { io.WriteString(t.a.stderr, s) }

// queueInto takes a session/prompt arriving during a running turn into it
// (PromptQueueing): its text goes to the turn's executor, its answer waits
// for the turn's end. It reports whether it took the prompt.
func (a *acpAgent) queueInto(m acpMessage) bool {
	if !a.opts.PromptQueueing {
		return false
	}
	var p struct {
		Prompt []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.inTurn || a.exe == nil {
		return false
	}
	var texts []string
	for _, b := range p.Prompt {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	a.queued = append(a.queued, m.ID)
	a.exe.Deliver(strings.Join(texts, "\n"))
	return true
}
