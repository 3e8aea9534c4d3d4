package server

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/harnessd/harnessd/wire"
)

// marshal encodes v without HTML escaping (responses and tool output read
// naturally) and without a trailing newline.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b, _ := json.Marshal(map[string]any{"detail": "encoding failed: " + err.Error()})
		return b
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

func writeJSONStatus(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(marshal(v))
}

// observationFrame writes {"type":"observation","data":OBS} in one pass
// (the generic encoder would re-validate the observation's own encoding).
func observationFrame(obs *wire.Observation) []byte {
	b := append(make([]byte, 0, 1024), `{"type":"observation","data":`...)
	b, err := obs.AppendJSON(b)
	if err != nil {
		return marshal(map[string]any{"type": frameTypeError, "data": map[string]any{
			"message": "encoding the observation failed: " + err.Error(), "code": codeExecution}})
	}
	return append(b, '}')
}
