package exec

import (
	"github.com/harnessd/harnessd/harness"
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

func (p *codexParser) line(b []byte, emit func(harness.Event)) error {
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
		emit(harness.ErrorEvent(harness.SourceHarness, msg, false))
	case "error":
		msg := str(m, "message")
		p.set("error", msg)
		emit(harness.ErrorEvent(harness.SourceHarness, msg, false))
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

func (p *codexParser) call(it map[string]any, emit func(harness.Event)) {
	name, args, ok := toolOf(it)
	id := str(it, "id")
	if !ok || p.calls[id] {
		return
	}
	p.calls[id] = true
	p.text.cut("\n")
	data := map[string]any{"tool_name": name, "arguments": args, "call_id": id}
	if s := str(it, "server"); s != "" {
		data["server"] = s
	}
	emit(ev(harness.EventToolCall, data))
}

func (p *codexParser) completed(it map[string]any, emit func(harness.Event)) {
	switch str(it, "type") {
	case "agent_message":
		t := str(it, "text")
		p.text.add(t)
		emit(textEvent(t))
		return
	case "reasoning":
		emit(ev(harness.EventLLMChunk, map[string]any{"content": str(it, "text"), "thought": true}))
		return
	case "error":
		emit(harness.ErrorEvent(harness.SourceHarness, str(it, "message"), true))
		return
	}
	name, _, ok := toolOf(it)
	if !ok {
		return
	}
	p.call(it, emit)
	data := map[string]any{"tool_name": name, "call_id": str(it, "id"), "error": nil}
	switch str(it, "type") {
	case "mcp_tool_call":
		data["result"] = contentText(get(it, "result.content"))
		if e := obj(it, "error"); e != nil {
			data["error"] = str(e, "message")
		}
	case "command_execution":
		data["result"] = str(it, "aggregated_output")
		data["exit_code"] = it["exit_code"]
	default:
		data["result"] = str(it, "status")
	}
	if st := str(it, "status"); st == "failed" || st == "declined" {
		if data["error"] == nil {
			data["error"] = st
		}
	}
	emit(ev(harness.EventToolResult, data))
}

func (p *codexParser) result(func(harness.Event)) (string, bool, map[string]any) {
	return p.text.final("\n"), false, p.extra
}

// geminiParser reads "gemini -p --output-format stream-json": init,
// message{role,content,delta}, tool_use, tool_result, error, result.
// Assistant deltas are llm_chunk events; the text they add up to is a
// text_output event when a tool call or the end closes it.
type geminiParser struct {
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
func (p *geminiParser) flush(emit func(harness.Event)) {
	if len(p.delta) > 0 {
		t := ""
		for _, d := range p.delta {
			t += d
		}
		emit(textEvent(t))
		p.delta = nil
	}
	p.text.cut("")
}

func (p *geminiParser) line(b []byte, emit func(harness.Event)) error {
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
			emit(ev(harness.EventLLMChunk, map[string]any{"content": c}))
		} else {
			emit(textEvent(c))
		}
	case "tool_use":
		p.flush(emit)
		id := str(m, "tool_id")
		p.tools[id] = str(m, "tool_name")
		emit(ev(harness.EventToolCall, map[string]any{"tool_name": str(m, "tool_name"), "arguments": m["parameters"], "call_id": id}))
	case "tool_result":
		id := str(m, "tool_id")
		data := map[string]any{"tool_name": p.tools[id], "call_id": id, "result": m["output"], "error": nil}
		if st := str(m, "status"); st != "success" {
			data["error"] = st
			if msg := str(m, "error.message"); msg != "" {
				data["error"] = msg
			}
		}
		emit(ev(harness.EventToolResult, data))
	case "error":
		emit(harness.ErrorEvent(harness.SourceHarness, str(m, "message"), true))
	case "result":
		p.flush(emit)
		p.set("status", m["status"])
		p.set("usage", m["stats"])
		if str(m, "status") == "error" {
			msg := str(m, "error.message")
			p.set("error", msg)
			emit(harness.ErrorEvent(harness.SourceHarness, msg, false))
		}
	}
	return nil
}

func (p *geminiParser) result(emit func(harness.Event)) (string, bool, map[string]any) {
	p.flush(emit)
	return p.text.final(""), false, p.extra
}

// openCodeParser reads "opencode run --format json": lines
// {type,timestamp,sessionID,part}: step_start, text, reasoning, tool_use
// (finished tools), step_finish{reason,tokens,cost}, error. Usage adds up
// the steps' tokens and cost.
type openCodeParser struct {
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

func (p *openCodeParser) line(b []byte, emit func(harness.Event)) error {
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
		emit(ev(harness.EventLLMChunk, map[string]any{"content": str(part, "text"), "thought": true}))
	case "tool_use":
		p.text.cut("\n")
		id, name := str(part, "callID"), str(part, "tool")
		emit(ev(harness.EventToolCall, map[string]any{"tool_name": name, "arguments": get(part, "state.input"), "call_id": id}))
		data := map[string]any{"tool_name": name, "call_id": id, "result": get(part, "state.output"), "error": nil}
		if str(part, "state.status") == "error" {
			data["error"] = get(part, "state.error")
		}
		emit(ev(harness.EventToolResult, data))
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
		emit(harness.ErrorEvent(harness.SourceHarness, msg, false))
	}
	return nil
}

func (p *openCodeParser) result(func(harness.Event)) (string, bool, map[string]any) {
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
