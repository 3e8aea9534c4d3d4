package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// jsonWriter appends JSON to a buffer with one reusable non-escaping
// encoder; observations are written in one pass instead of being encoded,
// embedded and re-validated at every level.
type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var writers = sync.Pool{New: func() any {
	w := &jsonWriter{}
	w.enc = json.NewEncoder(&w.buf)
	w.enc.SetEscapeHTML(false)
	return w
}}

// maxPooledWriter is the largest buffer a writer keeps in the pool.
const maxPooledWriter = 1 << 20

func getWriter() *jsonWriter { return writers.Get().(*jsonWriter) }

func putWriter(w *jsonWriter) {
	if w.buf.Cap() > maxPooledWriter {
		return
	}
	w.buf.Reset()
	writers.Put(w)
}

// value appends v's JSON (without the encoder's trailing newline). Raw
// JSON kept from a producer (arguments, extra fields, unknown payloads) is
// copied as it came, so invalid UTF-8 in it, which can only sit inside
// strings of valid JSON, becomes U+FFFD here, as encoding/json does for Go
// strings: a WebSocket text frame must be UTF-8, and a peer would drop the
// connection over it.
func (w *jsonWriter) value(v any) error {
	start := w.buf.Len()
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	w.buf.Truncate(w.buf.Len() - 1)
	if out := w.buf.Bytes()[start:]; !utf8.Valid(out) {
		fixed := bytes.ToValidUTF8(out, []byte("\uFFFD"))
		w.buf.Truncate(start)
		w.buf.Write(fixed)
	}
	return nil
}

// plain reports whether s can be written between quotes as is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

func (w *jsonWriter) str(s string) error {
	if plain(s) {
		w.buf.WriteByte('"')
		w.buf.WriteString(s)
		w.buf.WriteByte('"')
		return nil
	}
	return w.value(s)
}

// event appends one event in RFC 005 field order.
func (w *jsonWriter) event(e *Event) error {
	w.buf.WriteString(`{"type":`)
	if err := w.str(string(e.Type)); err != nil {
		return err
	}
	w.buf.WriteString(`,"timestamp":`)
	w.buf.Write(strconv.AppendFloat(w.buf.AvailableBuffer(), e.Timestamp, 'f', -1, 64))
	w.buf.WriteString(`,"data":`)
	if e.Data == nil {
		w.buf.WriteString("{}")
	} else if fast, err := w.payload(e.Data); err != nil {
		return err
	} else if !fast {
		if err := w.value(e.Data); err != nil {
			return err
		}
	}
	if e.Turn != 0 {
		w.buf.WriteString(`,"turn":`)
		w.buf.Write(strconv.AppendInt(w.buf.AvailableBuffer(), int64(e.Turn), 10))
	}
	if e.Origin != "" {
		w.buf.WriteString(`,"source":`)
		if err := w.str(string(e.Origin)); err != nil {
			return err
		}
	}
	w.buf.WriteByte('}')
	return nil
}

// metadata appends m: its other fields (metadataFields), then the turn
// events written directly.
func (w *jsonWriter) metadata(m *Metadata) error {
	if err := w.metadataFields(m); err != nil {
		return err
	}
	if len(m.TurnEvents) == 0 {
		return nil
	}
	w.buf.Truncate(w.buf.Len() - 1) // reopen the object
	if w.buf.Bytes()[w.buf.Len()-1] != '{' {
		w.buf.WriteByte(',')
	}
	w.buf.WriteString(`"turn_events":[`)
	for i := range m.TurnEvents {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		if err := w.event(&m.TurnEvents[i]); err != nil {
			return err
		}
	}
	w.buf.WriteString("]}")
	return nil
}
