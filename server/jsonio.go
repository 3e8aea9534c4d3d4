package server

import (
	"encoding/json"
	"net/http"
	"sync"

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

// observationPrefix and observationSuffix enclose an observation frame's data.
var observationPrefix, observationSuffix = []byte(`{"type":"observation","data":`), []byte{'}'}

// observationFrame writes {"type":"observation","data":OBS} in one pass
// (the generic encoder would re-validate the observation's own encoding),
// trimmed to the frame limit (see bounds.EncodeObservation), into dst.
func (s *Server) observationFrame(dst []byte, obs *wire.Observation) []byte {
	b, err := bounds.EncodeObservation(dst, obs, observationPrefix, observationSuffix, s.opts.MaxFrameBytes)
	if err != nil {
		return marshal((&wireError{Message: "encoding the observation failed: " + err.Error(), Code: codeExecution}).frame(frameTypeError))
	}
	return b
}

// maxPooledFrame is the largest observation frame buffer kept for reuse:
// a turn's frame is about a kilobyte; a flood's (up to the frame limit) is
// let go, so the pool holds no more than this per buffer.
const maxPooledFrame = 64 << 10

// frameBufs holds observation frames' buffers once written, so that a
// turn's frame allocates nothing (it was a quarter of the bytes the daemon
// allocated per turn, issue 28).
var frameBufs = sync.Pool{New: func() any { return new([]byte) }}

// sendObservation writes obs's frame to wc.
func (s *Server) sendObservation(wc *wsConn, obs *wire.Observation) {
	bp := frameBufs.Get().(*[]byte)
	b := s.observationFrame((*bp)[:0], s.present(obs))
	wc.sendRaw(b) // the connection's Write keeps nothing of b once it returns
	if cap(b) <= maxPooledFrame {
		*bp = b[:0]
		frameBufs.Put(bp)
	}
}
