package dialect

import (
	"encoding/json"
	"errors"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/wire"
)

// anthropicWire is what is read of a message before it is translated.
type anthropicWire struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// errAnthropicMessages is the refusal of messages that are not a
// non-empty list of messages.
var errAnthropicMessages = errors.New("messages request: messages must be a non-empty list")

// anthropicMessages calls f with each message of raw in order, until f
// fails: a first pass checks that every element decodes (so that such a
// list is refused first, as a decode of the whole list was), the second
// decodes each again and translates it. Plain messages take neither a
// decoder nor a copy of their content. Decoded whole first, 6,000 empty
// messages ({},, 18 KB) cost 1 MiB (59× the body) to be refused for the
// first's role.
func anthropicMessages(raw json.RawMessage, f func(i int, m *anthropicWire) error) error {
	var m anthropicWire
	n := 0
	if !jsonscan.Elements(raw, func(e []byte) bool {
		n++
		return readAnthropicWire(e, &m) == nil
	}) || n == 0 {
		return errAnthropicMessages
	}
	i := 0
	var err error
	jsonscan.Elements(raw, func(e []byte) bool {
		readAnthropicWire(e, &m) // it decoded in the first pass
		err = f(i, &m)
		i++
		return err == nil
	})
	return err
}

// readAnthropicWire reads the message e into m: by its keys when they are
// plain and name a field exactly or none (the content then e's own
// bytes), else with json.Unmarshal.
func readAnthropicWire(e []byte, m *anthropicWire) error {
	*m = anthropicWire{}
	if string(e) == "null" || wire.ObjectFields(e, func(k, v []byte) bool {
		switch string(k) {
		case "role":
			return jsonlist.PlainInto(&m.Role, v)
		case "content":
			m.Content = v
			return true
		}
		return !jsonlist.MayName(k, "role", "content")
	}) {
		return nil
	}
	*m = anthropicWire{}
	return json.Unmarshal(e, m)
}

// anthropicToolList reads the offered tools one at a time, keeping those
// with a name and an input schema; an element none of whose keys names a
// field is not decoded. Decoded whole into a slice first, 6,000 empty
// tools ({},, 18 KB) cost 1.4 MiB (84× the body).
func anthropicToolList(raw json.RawMessage) ([]Tool, error) {
	var out []Tool
	if !jsonscan.Elements(raw, func(e []byte) bool {
		if string(e) == "null" || jsonlist.NoField(e, "name", "description", "input_schema") {
			return true
		}
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if json.Unmarshal(e, &t) != nil {
			return false
		}
		if t.Name != "" && len(t.InputSchema) > 0 {
			out = append(out, Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
		}
		return true
	}) {
		return nil, errors.New("messages request: tools must be a list of tools")
	}
	return out, nil
}
