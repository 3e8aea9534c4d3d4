package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// Validate checks that p carries what its event type requires, for events
// that come from outside harnessd (a harness's own events): every required
// field present, arguments an object. It names the first missing field.
// raw is the data object as received, so that a present-but-empty field can
// be told from an absent one; nil skips that distinction.
func Validate(p Payload, raw json.RawMessage) error {
	if _, ok := p.(*Unknown); ok {
		return fmt.Errorf("unknown event type %q", p.EventType())
	}
	var present map[string]json.RawMessage
	if raw != nil {
		if err := json.Unmarshal(raw, &present); err != nil {
			return fmt.Errorf("data is not a JSON object")
		}
	}
	for _, f := range Fields(reflect.TypeOf(p)) {
		if !f.Required {
			continue
		}
		if present != nil {
			if _, ok := present[f.Name]; !ok {
				return fmt.Errorf("%s data has no %q", p.EventType(), f.Name)
			}
		}
	}
	if tc, ok := p.(*ToolCall); ok {
		if tc.ToolName == "" {
			return fmt.Errorf("tool_call data has an empty %q", "tool_name")
		}
		if a := bytes.TrimSpace(tc.Arguments); len(a) > 0 && a[0] != '{' && !bytes.Equal(a, []byte("null")) {
			return fmt.Errorf("tool_call %q must be a JSON object", "arguments")
		}
	}
	if tr, ok := p.(*ToolResult); ok && tr.ToolName == "" {
		return fmt.Errorf("tool_result data has an empty %q", "tool_name")
	}
	return nil
}
