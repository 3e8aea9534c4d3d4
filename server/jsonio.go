package server

import (
	"encoding/json"
	"net/http"

	"github.com/harnessd/harnessd/server/internal/bounds"
	"github.com/harnessd/harnessd/wire"
)

// marshal encodes v without HTML escaping (responses and tool output read
// naturally) and without a trailing newline.
func marshal(v any) []byte {
	b, err := wire.MarshalNoEscape(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"detail": "encoding failed: " + err.Error()})
	}
	return b
}

func writeJSONStatus(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(marshal(v))
}

// observationFrame writes {"type":"observation","data":OBS} in one pass
// (the generic encoder would re-validate the observation's own encoding),
// trimmed to the frame limit (see bounds.EncodeObservation).
func (s *Server) observationFrame(obs *wire.Observation) []byte {
	b, err := bounds.EncodeObservation(obs, []byte(`{"type":"observation","data":`), []byte{'}'}, s.opts.MaxFrameBytes)
	if err != nil {
		return marshal((&wireError{Message: "encoding the observation failed: " + err.Error(), Code: codeExecution}).frame(frameTypeError))
	}
	return b
}
