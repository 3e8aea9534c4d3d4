package streamjson

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// line is the envelope of one stdout line. Only the fields the adapter
// routes on are decoded here; each type decodes its own payload.
type line struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	Message         json.RawMessage `json:"message"`
	Event           json.RawMessage `json:"event"`
	Response        json.RawMessage `json:"response"`
	RequestID       string          `json:"request_id"`
	Request         json.RawMessage `json:"request"`
	Error           json.RawMessage `json:"error"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	// UUID names a transcript message (assistant and user lines) as the
	// agent's session file does.
	UUID string `json:"uuid"`
}

// message is an Anthropic message as carried by assistant and user lines.
// Content is a string or a content-block array.
type message struct {
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

// streamEvent is the raw Anthropic SSE event of a stream_event line.
type streamEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

// initInfo is the part of system/init kept for the turn's Extra; its lists
// are decoded an element at a time (toolList, serverList).
type initInfo struct {
	SessionID      string     `json:"session_id"`
	Model          string     `json:"model"`
	Tools          toolList   `json:"tools"`
	PermissionMode string     `json:"permissionMode"`
	QwenMode       string     `json:"permission_mode"`
	Version        string     `json:"claude_code_version"`
	MCPServers     serverList `json:"mcp_servers"`
}

// controlResponse is the response of a control_response line.
type controlResponse struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     json.RawMessage `json:"error"`
}

// errorText renders a control error, a string or an object with a message.
func (c controlResponse) errorText() string {
	var s string
	if json.Unmarshal(c.Error, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(c.Error, &o) == nil && o.Message != "" {
		return o.Message
	}
	return string(c.Error)
}

// controlRequestLine encodes a control_request for the agent.
func controlRequestLine(id string, req map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": id, "request": req})
	return b
}

// controlResponseLine encodes our answer to a control_request of the agent.
func controlResponseLine(id string, resp map[string]any, errMsg string) []byte {
	r := map[string]any{"subtype": "success", "request_id": id, "response": resp}
	if errMsg != "" {
		r = map[string]any{"subtype": "error", "request_id": id, "error": errMsg}
	}
	b, _ := json.Marshal(map[string]any{"type": "control_response", "response": r})
	return b
}

// userLine encodes one user turn.
func userLine(text string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	return b
}

var requestSeq atomic.Uint64

// newRequestID returns a request id unique within the daemon.
func newRequestID() string {
	return fmt.Sprintf("harnessd_%d", requestSeq.Add(1))
}
