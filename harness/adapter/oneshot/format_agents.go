package oneshot

import (
	"strings"

	"github.com/harnessd/harnessd/wire"
)

// Mappings of real agents' one-shot JSON streams (see the project's
// reference/cli-agents.md). A line that is not a JSON object becomes a
// text_output event; unknown event types are ignored, since agents add them
// between versions. The response is the agent's last text after its last
// tool call.

// codexParser reads "codex exec --json": thread.started{thread_id},
// turn.started, item.started/updated/completed{item}, turn.completed{usage},
// turn.failed{error}, error{message}.
type codexParser struct {
	chunks
	text  segments
	calls map[string]bool // item ids whose tool_call was emitted
	extra map[string]any
}

func (p *codexParser) set(k string, v any) {
	if p.extra == nil {
		p.extra = map[string]any{}
	}
	p.extra[k] = v
}

func (p *codexParser) line(b []byte, emit func(wire.Event)) error {
	m, ok := object(b)
	if !ok {
		emit(textEvent(string(b)))
		return nil
	}
	switch str(m, "type") {
	case "item.started":
		p.call(obj(m, "item"), emit)
	case "item.completed":
		p.completed(obj(m, "item"), emit)
	case "turn.completed":
		p.set("usage", m["usage"])
	case "turn.failed":
		msg := str(m, "error.message")
		p.set("error", msg)
		emit(wire.ErrorEvent(wire.OriginHarness, msg, false))
	case "error":
		msg := str(m, "message")
		p.set("error", msg)
		emit(wire.ErrorEvent(wire.OriginHarness, msg, false))
	}
	return nil
}

// toolOf names an item's tool and its arguments, if the item is a tool use.
func toolOf(it map[string]any) (name string, args any, ok bool) {
	switch str(it, "type") {
	case "mcp_tool_call":
		return str(it, "tool"), it["arguments"], true
	case "command_execution":
		return "shell", map[string]any{"command": it["command"]}, true
	case "file_change":
		return "file_change", map[string]any{"changes": it["changes"]}, true
	case "web_search":
		return "web_search", map[string]any{"query": it["query"]}, true
	}
	return "", nil, false
}

func (p *codexParser) call(it map[string]any, emit func(wire.Event)) {
	name, args, ok := toolOf(it)
	id := str(it, "id")
	if !ok || p.calls[id] {
		return
	}
	p.calls[id] = true
	p.text.cut("\n")
	tc := toolCall(name, args, id)
	tc.Server = str(it, "server")
	emit(ev(tc))
}

func (p *codexParser) completed(it map[string]any, emit func(wire.Event)) {
	switch str(it, "type") {
	case "agent_message":
		t := str(it, "text")
		p.text.add(t)
		emit(textEvent(t))
		return
	case "reasoning":
		emit(ev(p.chunk(str(it, "text"), true)))
		return
	case "error":
		emit(wire.ErrorEvent(wire.OriginHarness, str(it, "message"), true))
		return
	}
	name, _, ok := toolOf(it)
	if !ok {
		return
	}
	p.call(it, emit)
	r := &wire.ToolResult{ToolName: name, CallID: str(it, "id")}
	switch str(it, "type") {
	case "mcp_tool_call":
		r.Result = contentText(get(it, "result.content"))
		if e := obj(it, "error"); e != nil {
			msg := str(e, "message")
			r.Error = &msg
		}
	case "command_execution":
		r.Result = str(it, "aggregated_output")
		r.Extra = wire.Extra{"exit_code": it["exit_code"]}
	default:
		r.Result = str(it, "status")
	}
	if st := str(it, "status"); st == "failed" || st == "declined" {
		if r.Error == nil {
			r.Error = &st
		}
	}
	emit(ev(r))
}

func (p *codexParser) result(func(wire.Event)) (string, bool, map[string]any) {
	return p.text.final("\n"), false, p.extra
}

// geminiParser reads "gemini -p --output-format stream-json": init,
// message{role,content,delta}, tool_use, tool_result, error, result.
// Assistant deltas are llm_chunk events; the text they add up to is a
// text_output event when a tool call or the end closes it.
type geminiParser struct {
	chunks
	text  segments
	delta []string // deltas of the open segment
	tools map[string]string
	extra map[string]any
}

func (p *geminiParser) set(k string, v any) {
	if p.extra == nil {
		p.extra = map[string]any{}
	}
	p.extra[k] = v
}

// flush reports the open segment's text.
func (p *geminiParser) flush(emit func(wire.Event)) {
	if len(p.delta) > 0 {
		// One join: adding the deltas one at a time copied the text once
		// per delta (quadratic in a turn's deltas).
		emit(textEvent(strings.Join(p.delta, "")))
		p.delta = nil
	}
	p.text.cut("")
}

func (p *geminiParser) line(b []byte, emit func(wire.Event)) error {
	m, ok := object(b)
	if !ok {
		emit(textEvent(string(b)))
		return nil
	}
	switch str(m, "type") {
	case "init":
		if s := str(m, "model"); s != "" {
			p.set("model", s)
		}
	case "message":
		if str(m, "role") != "assistant" {
			return nil
		}
		c := str(m, "content")
		p.text.add(c)
		if d, _ := m["delta"].(bool); d {
			p.delta = append(p.delta, c)
			emit(ev(p.chunk(c, false)))
		} else {
			emit(textEvent(c))
		}
	case "tool_use":
		p.flush(emit)
		id := str(m, "tool_id")
		p.tools[id] = str(m, "tool_name")
		emit(ev(toolCall(str(m, "tool_name"), m["parameters"], id)))
	case "tool_result":
		id := str(m, "tool_id")
		r := &wire.ToolResult{ToolName: p.tools[id], CallID: id, Result: m["output"]}
		if st := str(m, "status"); st != "success" {
			if msg := str(m, "error.message"); msg != "" {
				st = msg
			}
			r.Error = &st
		}
		emit(ev(r))
	case "error":
		emit(wire.ErrorEvent(wire.OriginHarness, str(m, "message"), true))
	case "result":
		p.flush(emit)
		p.set("status", m["status"])
		p.set("usage", m["stats"])
		if str(m, "status") == "error" {
			msg := str(m, "error.message")
			p.set("error", msg)
			emit(wire.ErrorEvent(wire.OriginHarness, msg, false))
		}
	}
	return nil
}

func (p *geminiParser) result(emit func(wire.Event)) (string, bool, map[string]any) {
	p.flush(emit)
	return p.text.final(""), false, p.extra
}

// openCodeParser reads "opencode run --format json": lines
// {type,timestamp,sessionID,part}: step_start, text, reasoning, tool_use
// (finished tools), step_finish{reason,tokens,cost}, error. Usage adds up
// the steps' tokens and cost.
type openCodeParser struct {
	chunks
	text  segments
	usage map[string]any
	cost  float64
	steps int
	extra map[string]any
}

func (p *openCodeParser) set(k string, v any) {
	if p.extra == nil {
		p.extra = map[string]any{}
	}
	p.extra[k] = v
}

func (p *openCodeParser) line(b []byte, emit func(wire.Event)) error {
	m, ok := object(b)
	if !ok {
		emit(textEvent(string(b)))
		return nil
	}
	part := obj(m, "part")
	switch str(m, "type") {
	case "text":
		t := str(part, "text")
		p.text.add(t)
		emit(textEvent(t))
	case "reasoning":
		emit(ev(p.chunk(str(part, "text"), true)))
	case "tool_use":
		p.text.cut("\n")
		id, name := str(part, "callID"), str(part, "tool")
		emit(ev(toolCall(name, get(part, "state.input"), id)))
		r := &wire.ToolResult{ToolName: name, CallID: id, Result: get(part, "state.output")}
		if str(part, "state.status") == "error" {
			r.Error = errorText(get(part, "state.error"))
		}
		emit(ev(r))
	case "step_finish":
		p.steps++
		addNumbers(p.usage, obj(part, "tokens"))
		if c, ok := part["cost"].(float64); ok {
			p.cost += c
		}
		p.set("stop_reason", str(part, "reason"))
	case "error":
		msg := str(m, "error.data.message")
		if msg == "" {
			msg = str(m, "error.message")
		}
		if msg == "" {
			msg = str(m, "error.name")
		}
		p.set("error", msg)
		emit(wire.ErrorEvent(wire.OriginHarness, msg, false))
	}
	return nil
}

func (p *openCodeParser) result(func(wire.Event)) (string, bool, map[string]any) {
	if p.steps > 0 {
		p.set("usage", p.usage)
		p.set("cost", p.cost)
		p.set("steps", p.steps)
	}
	return p.text.final("\n"), false, p.extra
}

// addNumbers adds the numbers of src into dst, recursing into objects.
func addNumbers(dst, src map[string]any) {
	for k, v := range src {
		switch v := v.(type) {
		case float64:
			d, _ := dst[k].(float64)
			dst[k] = d + v
		case map[string]any:
			sub, ok := dst[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				dst[k] = sub
			}
			addNumbers(sub, v)
		}
	}
}
