package oneshot

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/harnessd/harnessd/testharness/agent"
	"github.com/harnessd/harnessd/testharness/agent/frontend"
	"github.com/harnessd/harnessd/testharness/agent/jsonl"
)

// The output formats of the oneshot front end. jsonl and text are
// harnessd's own; codex, gemini and opencode imitate "codex exec --json",
// "gemini -p --output-format stream-json" and "opencode run --format json"
// closely enough to exercise the exec adapter's mappings of those formats.

// jsonlShot: a session line, line-protocol events, turn_complete.
type jsonlShot struct {
	jsonl.Sink
	out *frontend.LineWriter
}

func newJSONLShot(w *frontend.LineWriter, stderr io.Writer) oneShotSink {
	return &jsonlShot{Sink: jsonl.NewSink(w, stderr), out: w}
}

func (s *jsonlShot) begin(id, _ string) {
	s.out.JSON(map[string]any{"type": "session", "session_id": id})
}

func (s *jsonlShot) end(out agent.Outcome, _ string) {
	data := map[string]any{"response": out.Response, "done": out.Done}
	if out.Cancelled {
		data["cancelled"] = true
	}
	s.out.JSON(jsonl.Event("turn_complete", data))
}

// textShot: plain text on stdout, the session id on stderr.
type textShot struct {
	out    *frontend.LineWriter
	stderr io.Writer
}

func newTextShot(w *frontend.LineWriter, stderr io.Writer) oneShotSink {
	return &textShot{out: w, stderr: stderr}
}

func (s *textShot) begin(id, _ string)        { fmt.Fprintf(s.stderr, "session id: %s\n", id) }
func (s *textShot) end(agent.Outcome, string) {}
func (s *textShot) Text(t string)             { s.out.Line([]byte(t)) }
func (s *textShot) Thought(t string)          { s.out.Line([]byte("(thinking) " + t)) }
func (s *textShot) Raw(line string)           { s.out.Line([]byte(line)) }
func (s *textShot) Stderr(t string)           { io.WriteString(s.stderr, t) }
func (s *textShot) Error(m string, _ bool)    { fmt.Fprintf(s.stderr, "error: %s\n", m) }
func (s *textShot) ToolCall(_, name string, args json.RawMessage) {
	s.out.Line([]byte("[tool " + name + " " + string(args) + "]"))
}
func (s *textShot) ToolResult(_, name, result string, isError bool) {
	s.out.Line([]byte("[" + name + " -> " + result + "]"))
}

// codexShot imitates codex exec --json.
type codexShot struct {
	out    *frontend.LineWriter
	stderr io.Writer
	items  int
	calls  map[string]map[string]any // call id -> the started item
}

func newCodexShot(w *frontend.LineWriter, stderr io.Writer) oneShotSink {
	return &codexShot{out: w, stderr: stderr, calls: map[string]map[string]any{}}
}

func (s *codexShot) item(typ string, fields map[string]any) map[string]any {
	fields["id"] = fmt.Sprintf("item_%d", s.items)
	fields["type"] = typ
	s.items++
	return fields
}

func (s *codexShot) begin(id, _ string) {
	s.out.JSON(map[string]any{"type": "thread.started", "thread_id": id})
	s.out.JSON(map[string]any{"type": "turn.started"})
}

func (s *codexShot) end(out agent.Outcome, msg string) {
	if out.Cancelled {
		s.out.JSON(map[string]any{"type": "turn.failed", "error": map[string]any{"message": "turn interrupted"}})
		return
	}
	s.out.JSON(map[string]any{"type": "turn.completed", "usage": map[string]any{
		"input_tokens": len(msg), "cached_input_tokens": 0, "output_tokens": len(out.Response), "reasoning_output_tokens": 0,
	}})
}

func (s *codexShot) completed(item map[string]any) {
	s.out.JSON(map[string]any{"type": "item.completed", "item": item})
}

func (s *codexShot) Text(t string)    { s.completed(s.item("agent_message", map[string]any{"text": t})) }
func (s *codexShot) Thought(t string) { s.completed(s.item("reasoning", map[string]any{"text": t})) }
func (s *codexShot) Error(m string, _ bool) {
	s.completed(s.item("error", map[string]any{"message": m}))
}
func (s *codexShot) Raw(line string) { s.out.Line([]byte(line)) }
func (s *codexShot) Stderr(t string) { io.WriteString(s.stderr, t) }
func (s *codexShot) ToolCall(id, name string, args json.RawMessage) {
	it := s.item("mcp_tool_call", map[string]any{
		"server": "env", "tool": name, "arguments": args, "result": nil, "error": nil, "status": "in_progress",
	})
	s.calls[id] = it
	s.out.JSON(map[string]any{"type": "item.started", "item": it})
}
func (s *codexShot) ToolResult(id, name, result string, isError bool) {
	it, ok := s.calls[id]
	if !ok {
		it = s.item("mcp_tool_call", map[string]any{"server": "env", "tool": name})
	}
	if isError {
		it["status"], it["error"], it["result"] = "failed", map[string]any{"message": result}, nil
	} else {
		it["status"] = "completed"
		it["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": result}}, "structured_content": nil}
	}
	s.completed(it)
}

// geminiShot imitates gemini -p --output-format stream-json.
type geminiShot struct {
	out     *frontend.LineWriter
	stderr  io.Writer
	started time.Time
	said    bool // assistant text since the last tool call
	tools   int
}

func newGeminiShot(w *frontend.LineWriter, stderr io.Writer) oneShotSink {
	return &geminiShot{out: w, stderr: stderr, started: time.Now()}
}

func (s *geminiShot) line(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	s.out.JSON(fields)
}

func (s *geminiShot) begin(id, msg string) {
	s.line("init", map[string]any{"session_id": id, "model": "testharness"})
	s.line("message", map[string]any{"role": "user", "content": msg})
}

func (s *geminiShot) end(out agent.Outcome, msg string) {
	stats := map[string]any{
		"total_tokens": len(msg) + len(out.Response), "input_tokens": len(msg), "output_tokens": len(out.Response),
		"cached": 0, "duration_ms": time.Since(s.started).Milliseconds(), "tool_calls": s.tools,
	}
	if out.Cancelled {
		s.line("result", map[string]any{"status": "error", "error": map[string]any{"type": "cancelled", "message": "turn interrupted"}, "stats": stats})
		return
	}
	s.line("result", map[string]any{"status": "success", "stats": stats})
}

// Text streams assistant text as deltas that concatenate to the turn's text.
func (s *geminiShot) Text(t string) {
	if s.said {
		t = "\n" + t
	}
	s.said = true
	s.line("message", map[string]any{"role": "assistant", "content": t, "delta": true})
}
func (s *geminiShot) Thought(string) {}
func (s *geminiShot) Error(m string, _ bool) {
	s.line("error", map[string]any{"severity": "warning", "message": m})
}
func (s *geminiShot) Raw(line string) { s.out.Line([]byte(line)) }
func (s *geminiShot) Stderr(t string) { io.WriteString(s.stderr, t) }
func (s *geminiShot) ToolCall(id, name string, args json.RawMessage) {
	s.said = false
	s.tools++
	s.line("tool_use", map[string]any{"tool_name": "mcp_env_" + name, "tool_id": id, "parameters": args})
}
func (s *geminiShot) ToolResult(id, name, result string, isError bool) {
	f := map[string]any{"tool_id": id, "status": "success", "output": result}
	if isError {
		f["status"] = "error"
		f["error"] = map[string]any{"type": "tool_error", "message": result}
	}
	s.line("tool_result", f)
}

// openCodeShot imitates opencode run --format json.
type openCodeShot struct {
	out     *frontend.LineWriter
	stderr  io.Writer
	session string
	parts   int
	args    map[string]json.RawMessage
}

func newOpenCodeShot(w *frontend.LineWriter, stderr io.Writer) oneShotSink {
	return &openCodeShot{out: w, stderr: stderr, args: map[string]json.RawMessage{}}
}

func (s *openCodeShot) line(typ string, part map[string]any) {
	part["id"] = fmt.Sprintf("prt_%d", s.parts)
	part["sessionID"] = s.session
	part["messageID"] = "msg_1"
	s.parts++
	s.out.JSON(map[string]any{"type": typ, "timestamp": time.Now().UnixMilli(), "sessionID": s.session, "part": part})
}

func (s *openCodeShot) begin(id, _ string) {
	s.session = id
	s.line("step_start", map[string]any{"type": "step-start"})
}

func (s *openCodeShot) finish(reason string, in, out int) {
	s.line("step_finish", map[string]any{"type": "step-finish", "reason": reason, "cost": 0,
		"tokens": map[string]any{"total": in + out, "input": in, "output": out, "reasoning": 0, "cache": map[string]any{"read": 0, "write": 0}}})
}

func (s *openCodeShot) end(out agent.Outcome, msg string) {
	s.finish("stop", len(msg), len(out.Response))
}

func (s *openCodeShot) Text(t string) {
	now := time.Now().UnixMilli()
	s.line("text", map[string]any{"type": "text", "text": t, "time": map[string]any{"start": now, "end": now}})
}
func (s *openCodeShot) Thought(t string) {
	s.line("reasoning", map[string]any{"type": "reasoning", "text": t})
}
func (s *openCodeShot) Error(m string, _ bool) {
	s.out.JSON(map[string]any{"type": "error", "timestamp": time.Now().UnixMilli(), "sessionID": s.session,
		"error": map[string]any{"name": "UnknownError", "data": map[string]any{"message": m}}})
}
func (s *openCodeShot) Raw(line string)                             { s.out.Line([]byte(line)) }
func (s *openCodeShot) Stderr(t string)                             { io.WriteString(s.stderr, t) }
func (s *openCodeShot) ToolCall(id, _ string, args json.RawMessage) { s.args[id] = args }

// ToolResult reports the finished tool, then closes the step as opencode
// does when the model asked for tools, and opens the next one.
func (s *openCodeShot) ToolResult(id, name, result string, isError bool) {
	state := map[string]any{"status": "completed", "input": s.args[id], "output": result, "metadata": map[string]any{}, "title": ""}
	if isError {
		state = map[string]any{"status": "error", "input": s.args[id], "error": result}
	}
	s.line("tool_use", map[string]any{"type": "tool", "tool": "env_" + name, "callID": id, "state": state})
	s.finish("tool-calls", 10, 5)
	s.line("step_start", map[string]any{"type": "step-start"})
}
