package eventlog

import (
	"fmt"
	"unicode/utf8"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/wire"
)

// coalesceTextBytes bounds the text of one coalesced text_output event.
const coalesceTextBytes = 64 << 10

// turnLimits bounds what one turn keeps.
type turnLimits struct {
	events int   // events kept (a coalesced run counts once)
	bytes  int64 // their encoded bytes, approximately
}

// limitsOf returns the bounds of e, defaults for zero fields.
func limitsOf(e config.EpisodeConfig) turnLimits {
	l := turnLimits{events: e.MaxTurnEvents, bytes: int64(e.MaxTurnEventBytes)}
	if l.events <= 0 {
		l.events = config.DefaultMaxTurnEvents
	}
	if l.bytes <= 0 {
		l.bytes = config.DefaultMaxTurnEventBytes
	}
	return l
}

// turnCaps is what the running turn has kept, and what it dropped. Once a
// bound is hit nothing more of the harness's is kept: the kept events are
// always a prefix of what happened, plus the turn's end.
type turnCaps struct {
	limits turnLimits
	events int
	bytes  int64
	cut    *wire.Truncation
}

// admit reports whether an event of size bytes fits; opens says it would be
// a new kept event (not a line joining a run). Exempt events always fit.
// When it does not fit, reason names the bound.
func (b *turnCaps) admit(size int64, opens, exempt bool) (reason string, ok bool) {
	if exempt {
		b.use(size, opens)
		return "", true
	}
	switch {
	case b.cut != nil:
		return b.cut.Reason, false
	case opens && b.events >= b.limits.events:
		return wire.TruncatedMaxEvents, false
	case b.bytes+size > b.limits.bytes:
		return wire.TruncatedMaxBytes, false
	}
	b.use(size, opens)
	return "", true
}

// use counts a kept event.
func (b *turnCaps) use(size int64, opens bool) {
	b.bytes += size
	if opens {
		b.events++
	}
}

// drop counts a dropped event; first says it is the turn's first drop.
func (b *turnCaps) drop(size int64, reason string) (first bool) {
	first = b.cut == nil
	if first {
		b.cut = &wire.Truncation{}
	}
	b.cut.EventsDropped++
	b.cut.BytesDropped += size
	b.cut.AddReason(reason)
	return first
}

// merge adds drops counted elsewhere (between turns); first as for drop.
func (b *turnCaps) merge(t *wire.Truncation) (first bool) {
	first = b.cut == nil
	if first {
		b.cut = &wire.Truncation{}
	}
	b.cut.EventsDropped += t.EventsDropped
	b.cut.BytesDropped += t.BytesDropped
	b.cut.AddReason(t.Reason)
	return first
}

// exempt events are kept whatever the bounds: the turn's end and the
// daemon's own (failures, notices), a few per turn. An egress event is the
// daemon's report of a connection the harness made, one per connection,
// as many as the harness makes: it counts like the harness's own events.
func exempt(e wire.Event) bool {
	return e.Type == wire.EventTurnComplete || e.Origin == wire.OriginDaemon && e.Type != wire.EventEgress
}

// truncationNotice is the message of the daemon's event that says a turn's
// events are cut short.
func truncationNotice(reason string, l turnLimits) string {
	switch reason {
	case wire.TruncatedMaxEvents:
		return fmt.Sprintf("turn reached episode.max_turn_events (%d): later events of this turn are dropped", l.events)
	case wire.TruncatedMaxBytes:
		return fmt.Sprintf("turn reached episode.max_turn_event_bytes (%s): later events of this turn are dropped", units.ByteSize(l.bytes))
	}
	return "turn reached " + reason + ": later events of this turn are dropped"
}

// coalescable reports whether e may join, or start, a run of text.
func coalescable(e wire.Event) bool {
	t, ok := e.Data.(*wire.TextOutput)
	return ok && e.Type == wire.EventTextOutput && len(t.Extra) == 0
}

// textRun is the open run of adjacent text_output events of one origin,
// kept as one event whose text is theirs joined by newlines.
type textRun struct {
	first wire.Event // the run's first event; its time and origin are the run's
	buf   []byte     // the joined text once a second event joined (nil before)
	size  int        // length of the joined text
	open  bool

	// What of the run the record holds: recorded says a piece of it was
	// written (its first done bytes); pending says text joined since, the
	// first of it at pendingTS.
	recorded  bool
	done      int
	pending   bool
	pendingTS float64
}

// joins reports whether e continues the open run.
func (r *textRun) joins(e wire.Event) bool {
	if !r.open || e.Origin != r.first.Origin || !coalescable(e) {
		return false
	}
	return r.size+1+len(e.Data.(*wire.TextOutput).Text) <= coalesceTextBytes
}

func (r *textRun) start(e wire.Event) {
	r.first, r.buf, r.size, r.open = e, r.buf[:0], len(e.Data.(*wire.TextOutput).Text), true
	r.recorded, r.done, r.pending, r.pendingTS = false, 0, true, e.Timestamp
}

func (r *textRun) join(e wire.Event) {
	if len(r.buf) == 0 {
		r.buf = append(r.buf, r.first.Data.(*wire.TextOutput).Text...)
	}
	r.buf = append(append(r.buf, '\n'), e.Data.(*wire.TextOutput).Text...)
	r.size = len(r.buf)
	if !r.pending {
		r.pending, r.pendingTS = true, e.Timestamp
	}
}

// piece returns the open run's text the record does not hold yet, as an
// event of the run's origin and turn stamped with the time of its first
// line, and counts it as recorded. Joined to the pieces before it by a
// newline it continues the run's text.
func (r *textRun) piece() (wire.Event, bool) {
	if !r.open || !r.pending {
		return wire.Event{}, false
	}
	text := r.first.Data.(*wire.TextOutput).Text
	if len(r.buf) > 0 {
		from := 0
		if r.recorded {
			from = r.done + 1 // after the newline that joined it
		}
		text = string(r.buf[from:])
	}
	e := r.first
	e.Timestamp, e.Data = r.pendingTS, &wire.TextOutput{Text: text}
	r.recorded, r.done, r.pending = true, r.size, false
	return e, true
}

// close ends the run and returns its event.
func (r *textRun) close() (wire.Event, bool) {
	if !r.open {
		return wire.Event{}, false
	}
	e := r.first
	if len(r.buf) > 0 {
		// A new payload: the first event's may be in the hands of the
		// live stream.
		e.Data = &wire.TextOutput{Text: string(r.buf)}
	}
	r.first, r.open, r.size = wire.Event{}, false, 0
	r.recorded, r.done, r.pending = false, 0, false
	r.buf = r.buf[:0]
	if cap(r.buf) > 2*coalesceTextBytes {
		r.buf = nil
	}
	return e, true
}

// pendingEvents are events that arrived between turns, bounded like a turn.
type pendingEvents struct {
	events []wire.Event
	budget turnCaps
}

func (p *pendingEvents) add(e wire.Event, l turnLimits) {
	p.budget.limits = l
	size := eventSize(e)
	if reason, ok := p.budget.admit(size, true, false); !ok {
		p.budget.drop(size, reason)
		return
	}
	p.events = append(p.events, e)
}

// take returns the pending events and what was dropped of them, and
// empties the queue.
func (p *pendingEvents) take() ([]wire.Event, *wire.Truncation) {
	evs, cut := p.events, p.budget.cut
	*p = pendingEvents{}
	return evs, cut
}

// eventOverhead approximates an event's encoding beyond its payload's
// strings: type, timestamp, turn, source and punctuation.
const eventOverhead = 96

// eventSize approximates the encoded size of e; text payloads are measured
// without encoding them, others are encoded.
func eventSize(e wire.Event) int64 {
	if n, ok := fastSize(e); ok {
		return n
	}
	b, err := wire.MarshalNoEscape(e)
	if err != nil {
		return eventOverhead
	}
	return int64(len(b))
}

// fastSize is eventSize of the events measured without encoding them (text
// without extra fields); false for the others.
func fastSize(e wire.Event) (int64, bool) {
	switch p := e.Data.(type) {
	case *wire.TextOutput:
		if len(p.Extra) == 0 {
			return eventOverhead + jsonStringLen(p.Text), true
		}
	case *wire.LLMChunk:
		if len(p.Extra) == 0 {
			return eventOverhead + 40 + jsonStringLen(p.Content) + jsonStringLen(p.MessageID), true
		}
	case *wire.Error:
		if len(p.Extra) == 0 {
			return eventOverhead + 32 + jsonStringLen(p.Message), true
		}
	case *wire.TurnComplete:
		// Every turn has one: measured, not encoded by reflection.
		if len(p.Extra) == 0 {
			return eventOverhead + 48 + jsonStringLen(p.Response), true
		}
	}
	return 0, false
}

// joinedSize is what a text_output event adds to a run it joins: its text
// and a newline.
func joinedSize(e wire.Event) int64 {
	return jsonStringLen(e.Data.(*wire.TextOutput).Text) - 1 // a newline instead of quotes
}

// jsonStringLen is the length of s encoded as a JSON string without HTML
// escaping (quotes included).
func jsonStringLen(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
			i++
		case c < 0x20:
			n += 6
			i++
		case c < utf8.RuneSelf:
			n++
			i++
		default:
			r, w := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && w == 1 {
				n += 6 // written as \ufffd
			} else if r == '\u2028' || r == '\u2029' {
				n += 6
			} else {
				n += int64(w)
			}
			i += w
		}
	}
	return n
}
