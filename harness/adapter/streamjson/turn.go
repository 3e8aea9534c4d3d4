package streamjson

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// resultExtra maps result fields to TurnResult.Extra keys.
var resultExtra = map[string]string{
	"session_id": "session_id", "subtype": "subtype", "is_error": "is_error", "num_turns": "num_turns",
	"duration_ms": "duration_ms", "duration_api_ms": "duration_api_ms", "total_cost_usd": "total_cost_usd",
	"usage": "usage", "modelUsage": "model_usage", "stop_reason": "stop_reason",
	"terminal_reason": "terminal_reason", "permission_denials": "permission_denials",
	"api_error_status": "api_error_status", "errors": "errors",
}

// mapper turns the stdout lines of one turn into events and, at the result
// line, into the turn's result.
type mapper struct {
	a        *Adapter
	p        *process.Process
	ctx      context.Context
	emit     func(wire.Event)
	partial  bool              // stream_event deltas carry the streamed text and thinking
	server   string            // the injected MCP server's name ("" without tools)
	names    map[string]string // tool_use id -> tool name, for tool_result events
	lastText string            // the last top-level assistant text
	extra    map[string]any
	values   *adapterkit.TurnValues // the turn's JSON values, bounded
}

// event emits p, marked with the subagent's tool use that produced it.
func (m *mapper) event(p wire.Payload, parent *string) {
	if parent != nil && *parent != "" {
		wire.SetExtra(p, "parent_tool_use_id", *parent)
	}
	m.emit(wire.New(wire.OriginHarness, p))
}

// handle maps one line. It returns done at the turn's result line. During
// replay (lines the agent printed before the turn) a result line is dropped.
func (m *mapper) handle(text []byte, replay bool) (harness.TurnResult, bool, error) {
	trimmed := bytes.TrimSpace(text)
	if len(trimmed) == 0 {
		return harness.TurnResult{}, false, nil
	}
	if trimmed[0] != '{' {
		m.event(&wire.TextOutput{Text: string(text)}, nil)
		return harness.TurnResult{}, false, nil
	}
	var l line
	if err := json.Unmarshal(trimmed, &l); err != nil {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol,
			"harness wrote malformed JSON: %v: %s", err, clip.Bytes(trimmed))
	}
	var err error
	switch l.Type {
	case "":
		err = harness.Fail(wire.FailureProtocol, "harness wrote a line without a type: %s", clip.Bytes(trimmed))
	case "system":
		if l.Subtype == "init" {
			m.init(trimmed)
		}
	case "assistant":
		err = m.assistant(l)
		m.a.noteMessage(l)
	case "user":
		err = m.user(l)
		m.a.noteMessage(l)
	case "stream_event":
		m.streamEvent(l)
	case "control_response":
		m.controlResponse(l)
	case "control_request":
		m.a.answer(m.ctx, m.p, l)
	case "result":
		if replay {
			m.a.log.Warn("dropped a result line printed before the turn", "line", clip.Bytes(trimmed))
			return harness.TurnResult{}, false, nil
		}
		return m.result(trimmed)
	default:
		// Claude Code adds line types over time (tool_progress,
		// rate_limit_event, keep_alive, ...): none of them ends a turn.
	}
	return harness.TurnResult{}, err != nil, err
}

// init keeps what system/init says about the session in the turn's Extra,
// and reports the injected MCP server when it is not connected.
func (m *mapper) init(raw []byte) {
	var in initInfo
	if err := json.Unmarshal(raw, &in); err != nil {
		m.a.log.Warn("unreadable system/init line", "err", err)
		return
	}
	set := func(k string, v any, ok bool) {
		if ok {
			m.extra[k] = v
		}
	}
	set("session_id", in.SessionID, in.SessionID != "")
	set("model", in.Model, in.Model != "")
	tools, servers := []string(in.Tools), []mcpServer(in.MCPServers)
	set("tools", tools, tools != nil)
	mode := cmp.Or(in.PermissionMode, in.QwenMode)
	set("permission_mode", mode, mode != "")
	set("agent_version", in.Version, in.Version != "")
	if servers != nil {
		for _, s := range servers {
			if s.Name == m.server && s.Status != "connected" {
				m.event(&wire.Error{Recoverable: true,
					Message: fmt.Sprintf("MCP server %q is %s: the environment's tools are unavailable", s.Name, s.Status)}, nil)
			}
		}
		m.extra["mcp_servers"] = servers
	}
	m.a.setSession(in.SessionID, in.Model)
}

// assistant maps the content blocks of an assistant message.
func (m *mapper) assistant(l line) error {
	var msg message
	if err := json.Unmarshal(l.Message, &msg); err != nil {
		return harness.Fail(wire.FailureProtocol, "assistant line with an unreadable message: %v", err)
	}
	bs, err := blocks(msg.Content, func(b *block) bool {
		return b.Type == "text" || b.Type == "thinking" || b.Type == "tool_use"
	})
	if err != nil {
		return harness.Fail(wire.FailureProtocol, "assistant message: %v", err)
	}
	synthetic := len(l.Error) > 0 && string(l.Error) != "null"
	for _, b := range bs {
		switch b.Type {
		case "text":
			if synthetic {
				// Claude Code's own report of an API failure ("API Error: ...").
				m.event(&wire.Error{Message: b.Text}, l.ParentToolUseID)
				continue
			}
			m.event(&wire.TextOutput{Text: b.Text}, l.ParentToolUseID)
			if l.ParentToolUseID == nil || *l.ParentToolUseID == "" {
				m.lastText = b.Text
			}
		case "thinking":
			if !m.partial {
				m.event(&wire.LLMChunk{Content: b.Thinking, Index: b.index, Thought: true}, l.ParentToolUseID)
			}
		case "tool_use":
			m.names[b.ID] = b.Name
			tc := &wire.ToolCall{ToolName: b.Name, Arguments: arguments(b.Input), CallID: b.ID}
			if server, tool, ok := splitMCPName(b.Name); ok {
				tc.Extra = wire.Extra{"mcp_server": server, "mcp_tool": tool}
			}
			m.event(tc, l.ParentToolUseID)
		}
	}
	return nil
}

// user maps the tool_result blocks of a user line; other user content (the
// interrupt notice, replayed prompts) is not an event.
func (m *mapper) user(l line) error {
	var msg message
	if err := json.Unmarshal(l.Message, &msg); err != nil {
		return harness.Fail(wire.FailureProtocol, "user line with an unreadable message: %v", err)
	}
	bs, err := blocks(msg.Content, func(b *block) bool { return b.Type == "tool_result" })
	if err != nil {
		return harness.Fail(wire.FailureProtocol, "user message: %v", err)
	}
	for _, b := range bs {
		result := contentText(b.Content)
		r := &wire.ToolResult{ToolName: m.names[b.ToolUseID], Result: result, CallID: b.ToolUseID}
		if b.IsError {
			r.Error = &result
		}
		m.event(r, l.ParentToolUseID)
	}
	return nil
}

// streamEvent maps text and thinking deltas of partial messages.
func (m *mapper) streamEvent(l line) {
	var ev streamEvent
	if err := json.Unmarshal(l.Event, &ev); err != nil || ev.Type != "content_block_delta" {
		return
	}
	switch ev.Delta.Type {
	case "text_delta":
		m.event(&wire.LLMChunk{Content: ev.Delta.Text, Index: ev.Index}, l.ParentToolUseID)
	case "thinking_delta":
		m.event(&wire.LLMChunk{Content: ev.Delta.Thinking, Index: ev.Index, Thought: true}, l.ParentToolUseID)
	}
}

// controlResponse routes the agent's answer to one of our requests.
func (m *mapper) controlResponse(l line) {
	var r controlResponse
	if err := json.Unmarshal(l.Response, &r); err != nil {
		m.a.log.Warn("unreadable control_response", "err", err)
		return
	}
	if m.a.isInterrupt(r.RequestID) && r.Subtype == "error" {
		m.extra["interrupt_error"] = r.errorText()
	}
}

// result ends the turn. Only the fields it reads are taken from the line
// (resultFields); their values are plain Go values up to wire.PlainLimit in
// all, raw JSON beyond.
func (m *mapper) result(raw []byte) (harness.TurnResult, bool, error) {
	r, err := resultFields(raw)
	if err != nil {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol, "unreadable result line: %v", err)
	}
	subtype, ok := r["subtype"].(string)
	if !ok {
		return harness.TurnResult{}, true, harness.Fail(wire.FailureProtocol, "result line without a subtype: %s", clip.Bytes(raw))
	}
	isErr, _ := r["is_error"].(bool)
	for k, key := range resultExtra {
		if v, ok := r[k]; ok && v != nil {
			m.extra[key] = v
		}
	}
	res := harness.TurnResult{Response: m.lastText, Extra: m.extra}
	if s, ok := r["result"].(string); ok {
		res.Response = s
	}
	switch {
	case subtype == "success" && isErr:
		return res, true, m.a.apiFailure(m.ctx, m.p, r["api_error_status"], res.Response)
	case subtype == "success":
	case m.a.interruptSent():
		res.Cancelled = true
	case subtype == "error_max_turns":
		m.extra["max_turns_reached"] = true
	case subtype == "error_max_budget_usd":
		m.extra["max_budget_reached"] = true
	default:
		msg := subtype
		if errs, ok := r["errors"].([]any); ok && len(errs) > 0 {
			parts := make([]string, len(errs))
			for i, e := range errs {
				parts[i] = fmt.Sprint(e)
			}
			msg += ": " + strings.Join(parts, "; ")
		}
		m.event(&wire.Error{Message: msg, Recoverable: true}, nil)
	}
	return res, true, nil
}

// resultFields reads the fields of the result object b that result uses
// (result, and the keys of resultExtra) as wire.PlainBudget decodes them,
// in the order of resultKeys; the others stay raw JSON, never decoded
// (decoded into a map, a 4 MiB line of [0,0,...] allocated 170 MiB). Its
// error for b that is not JSON is json.Unmarshal's.
func resultFields(b []byte) (map[string]any, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		return nil, err
	}
	out := map[string]any{}
	budget := wire.PlainBudget(wire.PlainLimit)
	for _, k := range resultKeys {
		if v, ok := raw[k]; ok {
			out[k] = budget.Decode(v)
		}
	}
	return out, nil
}

// resultKeys are the fields result reads: result, then resultExtra's keys
// in order.
var resultKeys = append([]string{"result"}, slices.Sorted(maps.Keys(resultExtra))...)

// arguments is tool input as wire.RawJSON writes its decoded value ({} for
// none): decoded up to wire.PlainLimit, kept as raw JSON beyond (decoded, a
// 4 MiB input of [0,0,...] allocated 170 MiB).
func arguments(raw json.RawMessage) json.RawMessage {
	switch v := wire.Plain(raw).(type) {
	case nil:
		return wire.RawJSON(map[string]any{})
	case json.RawMessage:
		return v
	default:
		return wire.RawJSON(v)
	}
}

// splitMCPName splits mcp__<server>__<tool>.
func splitMCPName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}
