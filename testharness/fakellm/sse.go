package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// jsonBytes encodes v compactly without HTML escaping.
func jsonBytes(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// writeJSON answers v as a JSON body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := jsonBytes(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// sseWriter writes Server-Sent Events, flushing after each. The first
// error sticks and makes later writes no-ops.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

// event writes one event; name "" omits the event: line. v is encoded as
// JSON unless it is a string, which is written as is.
func (s *sseWriter) event(name string, v any) {
	if s.err != nil {
		return
	}
	var data []byte
	if str, ok := v.(string); ok {
		data = []byte(str)
	} else if data, s.err = jsonBytes(v); s.err != nil {
		return
	}
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		s.err = fmt.Errorf("sse write: %w", err)
		return
	}
	s.flush()
}

func (s *sseWriter) flush() {
	if s.err != nil {
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.err = fmt.Errorf("sse flush: %w", err)
	}
}

// deltaSize is the size of streamed text and argument pieces.
const deltaSize = 16

// chunks splits s into pieces of about n bytes on rune boundaries, so
// clients are exercised on concatenating deltas. Empty s gives none.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
