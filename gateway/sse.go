package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// sseWriter writes Server-Sent Events, flushing after each. The first
// error sticks and makes later writes no-ops.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
	err error
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// event writes v as one event's JSON data; name "" omits the event: line.
func (s *sseWriter) event(name string, v any) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.err = fmt.Errorf("sse encode: %w", err)
		return
	}
	s.raw(name, string(b))
}

// raw writes one event with data as is.
func (s *sseWriter) raw(name, data string) {
	if s.err != nil {
		return
	}
	s.buf.Reset()
	if name != "" {
		s.buf.WriteString("event: " + name + "\n")
	}
	s.buf.WriteString("data: " + data + "\n\n")
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		s.err = fmt.Errorf("sse write: %w", err)
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.err = fmt.Errorf("sse flush: %w", err)
	}
}

// pieceSize is the size of re-synthesised text deltas.
const pieceSize = 64

// pieces splits s into deltas of about pieceSize bytes on rune boundaries;
// "" gives none.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		i := min(pieceSize, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
