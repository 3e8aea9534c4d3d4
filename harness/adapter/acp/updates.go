package acp

import (
	"encoding/json"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/wire"
)

// toolCall is what the adapter knows of one tool call of the agent.
type toolCall struct {
	id, title, name, kind, status string
	args                          any
	done                          bool // its tool_result was emitted
	stale                         bool // no update since the turn before the running one began
}

// toolName is the call's name when the agent gives one, else its title.
func (tc *toolCall) toolName() string {
	if tc.name != "" {
		return tc.name
	}
	return tc.title
}

func (tc *toolCall) arguments() any {
	if tc.args == nil {
		return map[string]any{}
	}
	return tc.args
}

func (tc *toolCall) apply(u *update) {
	for dst, src := range map[*string]*string{&tc.title: u.Title, &tc.name: u.Name, &tc.kind: u.Kind, &tc.status: u.Status} {
		if src != nil {
			*dst = *src
		}
	}
	if v := decodeAny(u.RawInput); v != nil {
		tc.args = v
	}
}

func terminalStatus(s string) bool { return s == "completed" || s == "failed" }

// update is the update object of session/update, every kind's fields in
// one struct.
type update struct {
	SessionUpdate string          `json:"sessionUpdate"`
	Content       json.RawMessage `json:"content"`
	MessageID     string          `json:"messageId"`
	ToolCallID    string          `json:"toolCallId"`
	Title         *string         `json:"title"`
	Name          *string         `json:"name"`
	Kind          *string         `json:"kind"`
	Status        *string         `json:"status"`
	RawInput      json.RawMessage `json:"rawInput"`
	RawOutput     json.RawMessage `json:"rawOutput"`
	Entries       json.RawMessage `json:"entries"`
	Meta          json.RawMessage `json:"_meta"`
}

// turnState maps one turn's session/update notifications to events and
// gathers what the turn's result reports. It lives on the goroutine running
// the turn.
type turnState struct {
	emit    func(wire.Event)
	log     *adapterkit.LogLimit
	session string
	calls   map[string]*toolCall

	text        strings.Builder   // the agent's message text
	chunks      int               // llm_chunk events so far
	usage       any               // the last _meta.usage of a chunk
	usageUpdate any               // the last usage_update
	permissions []wire.Permission // permission requests answered
	outputBase  int64             // the agent's output bytes when the prompt was sent
}

// newTurnState starts a turn; calls is the episode's tool call table, from
// which it drops the calls finished in earlier turns and the unfinished
// ones without an update during the last turn. So the table holds at most
// the calls of two turns however long the episode (a call left unfinished,
// as a cancelled turn may leave one, has one turn to finish); an update of
// a dropped call opens it again, with a new tool_call event.
func newTurnState(emit func(wire.Event), log *adapterkit.LogLimit, session string, calls map[string]*toolCall) *turnState {
	for id, tc := range calls {
		if tc.done || tc.stale {
			delete(calls, id)
			continue
		}
		tc.stale = true
	}
	return &turnState{emit: emit, log: log, session: session, calls: calls}
}

// notify handles one notification of the agent.
func (t *turnState) notify(method string, params json.RawMessage) {
	if method != "session/update" {
		t.log.Debug("acp: ignoring notification", "method", clip.String(method))
		return
	}
	var n struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if err := json.Unmarshal(params, &n); err != nil || len(n.Update) == 0 {
		t.log.Warn("acp: malformed session/update", "params", clip.Bytes(params))
		return
	}
	if n.SessionID != "" && n.SessionID != t.session {
		t.log.Debug("acp: session/update for another session", "session", clip.String(n.SessionID))
		return
	}
	var u update
	if err := json.Unmarshal(n.Update, &u); err != nil {
		t.log.Warn("acp: malformed session/update", "update", clip.Bytes(n.Update), "err", err)
		return
	}
	switch u.SessionUpdate {
	case "agent_message_chunk":
		t.chunk(&u, false)
	case "agent_thought_chunk":
		t.chunk(&u, true)
	case "tool_call", "tool_call_update":
		t.toolCall(&u)
	case "plan":
		entries := decodeAny(u.Entries)
		if entries == nil {
			entries = []any{}
		}
		t.emitChunk(&wire.LLMChunk{Extra: wire.Extra{"plan": entries}})
	case "usage_update":
		if m, ok := decodeAny(n.Update).(map[string]any); ok {
			delete(m, "sessionUpdate")
			t.usageUpdate = m
		}
	default:
		// user_message_chunk, available_commands_update, current_mode_update,
		// config_option_update, session_info_update, notice, ... and kinds
		// of later versions.
		t.log.Debug("acp: ignoring session/update", "kind", clip.String(u.SessionUpdate))
	}
}

func (t *turnState) emitChunk(c *wire.LLMChunk) {
	c.Index = t.chunks
	t.chunks++
	t.emit(wire.New(wire.OriginHarness, c))
}

// chunk maps an agent message or thought chunk. Empty text chunks (Qwen
// sends them to carry usage) make no event.
func (t *turnState) chunk(u *update, thought bool) {
	t.keepUsage(u.Meta)
	var b struct {
		Type string          `json:"type"`
		Text *string         `json:"text"`
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(u.Content, &b); err != nil {
		t.log.Warn("acp: chunk without a content block", "kind", clip.String(u.SessionUpdate), "content", clip.Bytes(u.Content))
		return
	}
	t.keepUsage(b.Meta)
	c := &wire.LLMChunk{Thought: thought, MessageID: u.MessageID}
	if b.Type == "text" || (b.Type == "" && b.Text != nil) {
		if b.Text == nil || *b.Text == "" {
			return
		}
		c.Content = *b.Text
		if !thought {
			t.text.WriteString(*b.Text)
		}
	} else {
		c.Extra = wire.Extra{"block": decodeAny(u.Content)}
	}
	t.emitChunk(c)
}

func (t *turnState) keepUsage(meta json.RawMessage) {
	switch m := decodeAny(meta).(type) {
	case map[string]any:
		if m["usage"] != nil {
			t.usage = m["usage"]
		}
	case json.RawMessage:
		// Too large to decode: its usage field alone, if its keys are
		// plain (the last one, as a decoded map keeps).
		var usage any
		wire.ObjectFields(m, func(k, v []byte) bool {
			if string(k) == "usage" {
				usage = decodeAny(v)
			}
			return true
		})
		if usage != nil {
			t.usage = usage
		}
	}
}

// toolCall handles tool_call and tool_call_update: the first sighting of an
// id makes a tool_call event, the first terminal status a tool_result.
func (t *turnState) toolCall(u *update) {
	if u.ToolCallID == "" {
		t.log.Warn("acp: tool call update without toolCallId", "kind", clip.String(u.SessionUpdate))
		return
	}
	tc, known := t.calls[u.ToolCallID]
	if !known {
		tc = &toolCall{id: u.ToolCallID}
		t.calls[tc.id] = tc
	}
	tc.stale = false
	tc.apply(u)
	if !known {
		call := &wire.ToolCall{ToolName: tc.toolName(), Arguments: wire.RawJSON(tc.arguments()), CallID: tc.id}
		for k, v := range map[string]string{"title": tc.title, "kind": tc.kind, "status": tc.status} {
			if v != "" {
				wire.SetExtra(call, k, v)
			}
		}
		t.emit(wire.New(wire.OriginHarness, call))
	}
	if terminalStatus(tc.status) && !tc.done {
		tc.done = true
		result, text := toolOutput(u.Content, u.RawOutput)
		r := &wire.ToolResult{ToolName: tc.toolName(), CallID: tc.id, Result: result,
			Extra: wire.Extra{"status": tc.status, "arguments": tc.arguments()}}
		if tc.status == "failed" {
			if text == "" {
				text = "tool call failed"
			}
			r.Error = &text
		}
		t.emit(wire.New(wire.OriginHarness, r))
	}
}

// toolOutput extracts a tool call's result: the text of its content blocks,
// else its rawOutput, else its other content (diffs, terminals). It also
// returns the result as text, for error messages.
func toolOutput(content, rawOutput json.RawMessage) (any, string) {
	texts, items := contentTexts(content)
	if len(texts) > 0 {
		s := strings.Join(texts, "\n")
		return s, s
	}
	if v := decodeAny(rawOutput); v != nil {
		if s, ok := v.(string); ok {
			return s, s
		}
		return v, clip.Bytes(rawOutput)
	}
	if items {
		return decodeAny(content), ""
	}
	return "", ""
}

// result is the turn's result for the prompt's response pr.
func (t *turnState) result(pr promptResult) harness.TurnResult {
	extra := map[string]any{}
	if pr.StopReason != "" {
		extra["stop_reason"] = pr.StopReason
	}
	if v := decodeAny(pr.Usage); v != nil {
		extra["usage"] = v
	} else if t.usage != nil {
		extra["usage"] = t.usage
	}
	if v := decodeAny(pr.Meta); v != nil {
		extra["meta"] = v
	}
	if t.usageUpdate != nil {
		extra["usage_update"] = t.usageUpdate
	}
	if len(t.permissions) > 0 {
		extra["permissions"] = t.permissions
	}
	return harness.TurnResult{Response: t.text.String(), Cancelled: pr.StopReason == StopCancelled, Extra: extra}
}

// decodeAny decodes JSON into plain Go values up to wire.PlainLimit and
// keeps it as raw JSON beyond (wire.Plain): decoded, an update's 4 MiB of
// [0,0,...] allocated 170 MiB, and a tool call's input is kept for two
// turns. Nothing, null or invalid JSON give nil.
func decodeAny(raw json.RawMessage) any {
	return wire.Plain(raw)
}
