package harness

import (
	"bytes"
	"encoding/json"
)

// marshalNoEscape encodes v without escaping <, > and &, so that responses
// and tool output read naturally in logs and trajectories.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
