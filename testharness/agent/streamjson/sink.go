package streamjson

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/testharness/agent"
)

// streamSink maps executor output onto Claude Code's output lines: one
// assistant line per content block (text, thinking, tool_use), a user line
// carrying each tool_result, and stream_event lines before each block when
// --include-partial-messages is set.
type streamSink struct{ a *streamAgent }

func (s streamSink) Text(t string) {
	s.partial(map[string]any{"type": "text", "text": ""}, "text_delta", "text", t)
	s.a.assistant(map[string]any{"type": "text", "text": t}, "")
}

func (s streamSink) Thought(t string) {
	s.partial(map[string]any{"type": "thinking", "thinking": ""}, "thinking_delta", "thinking", t)
	s.a.assistant(map[string]any{"type": "thinking", "thinking": t, "signature": "testharness"}, "")
}

func (s streamSink) ToolCall(id, name string, args json.RawMessage) {
	a := s.a
	a.turn.toolCalls++
	a.turn.toolUse = "toolu_" + id
	full := name
	if a.tools != nil {
		server, tool := a.tools.resolve(name)
		full = "mcp__" + server + "__" + tool
	}
	s.partial(map[string]any{"type": "tool_use", "id": a.turn.toolUse, "name": full, "input": map[string]any{}},
		"input_json_delta", "partial_json", string(args))
	a.assistant(map[string]any{"type": "tool_use", "id": a.turn.toolUse, "name": full, "input": args}, "")
}

func (s streamSink) ToolResult(id, name, result string, isError bool) {
	content := []any{map[string]any{"type": "text", "text": result}}
	s.a.out.JSON(map[string]any{
		"type": "user",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "tool_use_id": "toolu_" + id, "content": content, "is_error": isError}}},
		"parent_tool_use_id": nil, "session_id": s.a.session, "uuid": newUUID(), "tool_use_result": content,
	})
}

// Error goes to stderr: Claude Code has no output line for diagnostics.
func (s streamSink) Error(msg string, recoverable bool) {
	fmt.Fprintf(s.a.stderr, "error: %s (recoverable: %v)\n", msg, recoverable)
}

func (s streamSink) Raw(line string) { s.a.out.Line([]byte(line)) }

func (s streamSink) Stderr(t string) { io.WriteString(s.a.stderr, t) }

// partial writes the stream_event lines of one content block: start, one
// delta per word, stop.
func (s streamSink) partial(start map[string]any, deltaType, field, text string) {
	a := s.a
	if !a.flags.IncludePartialMessages {
		return
	}
	ev := func(e map[string]any) {
		a.out.JSON(map[string]any{"type": "stream_event", "event": e, "session_id": a.session,
			"parent_tool_use_id": nil, "uuid": newUUID()})
	}
	ev(map[string]any{"type": "content_block_start", "index": 0, "content_block": start})
	for _, piece := range strings.SplitAfter(text, " ") {
		if piece != "" {
			ev(map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": deltaType, field: piece}})
		}
	}
	ev(map[string]any{"type": "content_block_stop", "index": 0})
}

// assistant writes one assistant line with a single content block. model
// overrides the model (Claude reports "<synthetic>" for API errors) and
// then errKind is set as the line's error.
func (a *streamAgent) assistant(block map[string]any, errKind string) {
	model := a.model
	if errKind != "" {
		model = "<synthetic>"
	}
	line := map[string]any{
		"type": "assistant",
		"message": map[string]any{"id": "msg_" + newUUID()[:8], "type": "message", "role": "assistant",
			"model": model, "content": []any{block}, "stop_reason": nil, "usage": usage(1, 1)},
		"parent_tool_use_id": nil, "session_id": a.session, "uuid": newUUID(),
	}
	if errKind != "" {
		line["error"] = errKind
	}
	a.out.JSON(line)
}

// directives are the verbs only this front end knows.
func (a *streamAgent) directives() map[string]agent.DirectiveFunc {
	return map[string]agent.DirectiveFunc{
		// apierror STATUS [TEXT]: a synthetic assistant "API Error" line, a
		// result with is_error and api_error_status, then exit 1.
		"apierror": func(_ context.Context, arg string, _ func(string)) bool {
			code, text, _ := strings.Cut(arg, " ")
			status, err := strconv.Atoi(code)
			if err != nil || status <= 0 {
				status = 500
			}
			if text = strings.TrimSpace(text); text == "" {
				text = `{"type":"error","error":{"type":"api_error","message":"fake failure"}}`
			}
			a.turn.apiStatus, a.turn.apiText = status, text
			a.assistant(map[string]any{"type": "text", "text": fmt.Sprintf("API Error: %d %s", status, text)},
				apiErrorKind(status))
			return true
		},
		// maxturns [N]: end the turn with an error_max_turns result.
		"maxturns": func(_ context.Context, arg string, _ func(string)) bool {
			a.turn.limit = "error_max_turns"
			a.turn.limitMsg = fmt.Sprintf("Reached maximum number of turns (%d)", atoiDefault(arg, 1))
			return true
		},
		// maxbudget: end the turn with an error_max_budget_usd result.
		"maxbudget": func(_ context.Context, arg string, _ func(string)) bool {
			a.turn.limit = "error_max_budget_usd"
			a.turn.limitMsg = "Reached maximum budget"
			return true
		},
		// askperm TOOL: ask the host for permission (control_request
		// can_use_tool) and say its answer.
		"askperm": func(ctx context.Context, arg string, say func(string)) bool {
			tool := strings.TrimSpace(arg)
			r, err := a.request(ctx, map[string]any{"subtype": "can_use_tool", "tool_name": tool,
				"input": map[string]any{}, "tool_use_id": "toolu_perm"})
			switch {
			case err != nil:
				say("permission " + tool + ": " + err.Error())
			case r.Subtype == "error":
				say("permission " + tool + ": error: " + r.Error)
			default:
				var p struct {
					Behavior string `json:"behavior"`
				}
				json.Unmarshal(r.Response, &p)
				say("permission " + tool + ": " + p.Behavior)
			}
			return false
		},
	}
}

// atoiDefault is s as an integer, or def when it is not one.
func atoiDefault(s string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		return n
	}
	return def
}

func apiErrorKind(status int) string {
	switch {
	case status == 401 || status == 403:
		return "authentication_failed"
	case status == 429:
		return "rate_limit"
	case status >= 500:
		return "server_error"
	case status >= 400:
		return "invalid_request"
	}
	return "unknown"
}

// streamTools calls tools on the --mcp-config servers, the way Claude Code
// does: named mcp__<server>__<tool> towards the model, with the tool_use id
// in _meta["claudecode/toolUseId"].
type streamTools struct {
	a     *streamAgent
	names []string
	conns map[string]*agent.MCPTools

	once sync.Once
	stat []serverStatus
}

type serverStatus struct {
	name, status string
	tools        []string
}

func newStreamTools(servers map[string]mcpServer, protocol string, a *streamAgent) *streamTools {
	st := &streamTools{a: a, names: sortedNames(servers), conns: map[string]*agent.MCPTools{}}
	for name, s := range servers {
		url, _ := s.endpoint()
		st.conns[name] = &agent.MCPTools{URL: url, Headers: s.Headers, ProtocolVersion: protocol}
	}
	return st
}

// resolve maps a directive's tool name to a server and tool: mcp__S__T
// names a server; a bare name goes to the first server (in name order).
func (st *streamTools) resolve(name string) (server, tool string) {
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if s, t, ok := strings.Cut(rest, "__"); ok && st.conns[s] != nil {
			return s, t
		}
	}
	return st.names[0], name
}

// status connects to every server once and reports it as Claude's
// system/init does.
func (st *streamTools) status(ctx context.Context) []serverStatus {
	st.once.Do(func() {
		for _, n := range st.names {
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			tools, err := st.conns[n].List(c)
			cancel()
			s := serverStatus{name: n, status: "connected", tools: tools}
			if err != nil {
				s.status = "failed"
				fmt.Fprintf(st.a.stderr, "MCP server %q failed to connect: %v\n", n, err)
			}
			st.stat = append(st.stat, s)
		}
	})
	return st.stat
}

// List returns the tools of every server.
func (st *streamTools) List(ctx context.Context) ([]string, error) {
	var all []string
	for _, n := range st.names {
		tools, err := st.conns[n].List(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		all = append(all, tools...)
	}
	return all, nil
}

// Call calls a tool with the running tool_use id in _meta.
func (st *streamTools) Call(ctx context.Context, name string, args json.RawMessage) (string, bool, error) {
	server, tool := st.resolve(name)
	return st.conns[server].CallMeta(ctx, tool, args, map[string]any{"claudecode/toolUseId": st.a.turn.toolUse})
}

func (st *streamTools) close() {
	for _, c := range st.conns {
		c.Close()
	}
}
