package dialect

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/wire"
)

// A Chat Completions message's tool calls and content parts are read one
// element at a time into a list sized once, an element of plain keys and
// string values without reflection: decoded whole into a slice of structs
// and then copied, 6,000 empty tool calls ({},, 18 KB, within the door's
// charge) cost the dialect 2.5 MiB (147× the body).

// chatToolCall is what is read of a Chat Completions tool call.
type chatToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatToolCalls reads a message's tool calls: nil unless raw is a list
// every element of which decodes (as a decode of the whole list did).
func chatToolCalls(raw json.RawMessage) []ToolCall {
	n := jsonlist.Count(raw)
	if n <= 0 {
		return nil
	}
	calls := make([]ToolCall, 0, n)
	var c chatToolCall
	if !jsonscan.Elements(raw, func(e []byte) bool {
		c = chatToolCall{}
		if !fastToolCall(e, &c) {
			c = chatToolCall{}
			if json.Unmarshal(e, &c) != nil {
				return false
			}
		}
		calls = append(calls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		return true
	}) {
		return nil
	}
	return calls
}

// fastToolCall fills c from e when e is null or an object of plain keys
// and string values that json.Unmarshal would read the same; false leaves
// e to json.Unmarshal.
func fastToolCall(e []byte, c *chatToolCall) bool {
	if string(e) == "null" {
		return true
	}
	return wire.ObjectFields(e, func(k, v []byte) bool {
		switch string(k) {
		case "id":
			return jsonlist.PlainInto(&c.ID, v)
		case "function":
			return string(v) == "null" || wire.ObjectFields(v, func(k, v []byte) bool {
				switch string(k) {
				case "name":
					return jsonlist.PlainInto(&c.Function.Name, v)
				case "arguments":
					return jsonlist.PlainInto(&c.Function.Arguments, v)
				}
				return !jsonlist.MayName(k, "name", "arguments")
			})
		}
		return !jsonlist.MayName(k, "id", "function")
	})
}

// chatPart is what is read of a content part.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// chatParts reads a message's content list: ok is false unless every
// element decodes (as a decode of the whole list did).
func chatParts(raw json.RawMessage) (parts []Part, ok bool) {
	n := jsonlist.Count(raw)
	if n < 0 {
		return nil, false
	}
	parts = make([]Part, 0, n)
	var p chatPart
	if !jsonscan.Elements(raw, func(e []byte) bool {
		p = chatPart{}
		if !fastPart(e, &p) {
			p = chatPart{}
			if json.Unmarshal(e, &p) != nil {
				return false
			}
		}
		parts = append(parts, Part{Type: p.Type, Text: p.Text, ImageURL: p.ImageURL.URL})
		return true
	}) {
		return nil, false
	}
	return parts, true
}

// fastPart is fastToolCall for a content part.
func fastPart(e []byte, p *chatPart) bool {
	if string(e) == "null" {
		return true
	}
	return wire.ObjectFields(e, func(k, v []byte) bool {
		switch string(k) {
		case "type":
			return jsonlist.PlainInto(&p.Type, v)
		case "text":
			return jsonlist.PlainInto(&p.Text, v)
		case "image_url":
			return string(v) == "null" || wire.ObjectFields(v, func(k, v []byte) bool {
				if string(k) == "url" {
					return jsonlist.PlainInto(&p.ImageURL.URL, v)
				}
				return !jsonlist.MayName(k, "url")
			})
		}
		return !jsonlist.MayName(k, "type", "text", "image_url")
	})
}

// chatMessages reads a request's messages one at a time, failing at the
// first without a role: decoded whole into a slice of raw fields first,
// 6,000 empty messages ({},, 18 KB) cost 4 MiB (232× the body) to be
// refused for the first's missing role. As that decode did, a list with
// an element that is not an object (or null) is refused first.
func chatMessages(raw json.RawMessage) ([]Message, error) {
	n := 0
	if !jsonscan.Elements(raw, func(e []byte) bool {
		n++
		return e[0] == '{' || string(e) == "null"
	}) || n == 0 {
		return nil, errors.New("chat request: messages must be a non-empty list of objects")
	}
	msgs := make([]Message, 0, min(n, 64)) // not n before their roles are read
	var err error
	var w chatWireMessage
	jsonscan.Elements(raw, func(e []byte) bool {
		w = chatWireMessage{}
		if string(e) != "null" && !fastWire(e, &w) {
			w = chatWireMessage{}
			if err = json.Unmarshal(e, &w); err != nil {
				err = fmt.Errorf("chat request: message %d: %w", len(msgs), err)
				return false
			}
		}
		m, ok := chatMessage(&w)
		if !ok {
			err = fmt.Errorf("chat request: message %d has no role", len(msgs))
			return false
		}
		msgs = append(msgs, m)
		return true
	})
	if err != nil {
		return nil, err
	}
	return msgs, nil
}

// fastWire fills w from the message object e when its keys are plain and
// each names a field exactly or none: the fields are e's own bytes, which
// chatMessage copies what it keeps of. false leaves e to json.Unmarshal.
func fastWire(e []byte, w *chatWireMessage) bool {
	return wire.ObjectFields(e, func(k, v []byte) bool {
		switch string(k) {
		case "role":
			w.Role = v
		case "content":
			w.Content = v
		case "reasoning_content":
			w.ReasoningContent = v
		case "tool_calls":
			w.ToolCalls = v
		case "tool_call_id":
			w.ToolCallID = v
		default:
			return !jsonlist.MayName(k, "role", "content", "reasoning_content", "tool_calls", "tool_call_id")
		}
		return true
	})
}
