package bounds

import (
	"fmt"
	"unicode/utf8"

	"github.com/harnessd/harnessd/wire"
)

// fitMargin is room kept for the truncation marker and rounding when an
// observation is trimmed to fit a frame.
const fitMargin = 1024

// EncodeObservation appends the wire form of obs between prefix and
// suffix to dst, at most limit bytes in all (of what it appends), and
// returns the extended buffer. An observation that would be larger loses
// its last events (never the turn's end or the daemon's own events), then
// the end of its response, and says so in metadata.truncated (reason
// frame_limit). It fails only when even that does not fit.
func EncodeObservation(dst []byte, obs *wire.Observation, prefix, suffix []byte, limit int64) ([]byte, error) {
	start := len(dst)
	b, err := appendObservation(dst, obs, prefix, suffix)
	if err != nil || int64(len(b)-start) <= limit {
		return b, err
	}
	excess := int64(len(b)-start) - limit + fitMargin
	trimmed := dropLastEvents(obs, excess)
	if b, err = appendObservation(b[:start], trimmed, prefix, suffix); err != nil || int64(len(b)-start) <= limit {
		return b, err
	}
	excess = int64(len(b)-start) - limit + fitMargin
	trimmed = cutResponse(trimmed, excess)
	if b, err = appendObservation(b[:start], trimmed, prefix, suffix); err != nil || int64(len(b)-start) <= limit {
		return b, err
	}
	return nil, fmt.Errorf("observation of %d bytes does not fit the frame limit of %d bytes even without its events", len(b)-start, limit)
}

func appendObservation(dst []byte, obs *wire.Observation, prefix, suffix []byte) ([]byte, error) {
	b, err := obs.AppendJSON(append(dst, prefix...))
	if err != nil {
		return nil, err
	}
	return append(b, suffix...), nil
}

// dropLastEvents returns a copy of obs without its last droppable events,
// enough of them to save excess bytes (the metadata, events included, is
// written twice).
func dropLastEvents(obs *wire.Observation, excess int64) *wire.Observation {
	evs := obs.Metadata.TurnEvents
	keep := make([]bool, len(evs))
	var saved int64
	var dropped int
	var droppedBytes int64
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if saved >= excess || e.Type == wire.EventTurnComplete || e.Origin == wire.OriginDaemon {
			keep[i] = true
			continue
		}
		b, err := wire.MarshalNoEscape(e)
		n := int64(len(b)) + 1
		if err != nil {
			n = 1
		}
		saved += 2 * n
		dropped++
		droppedBytes += n - 1
	}
	c := *obs
	c.Metadata.TurnEvents = make([]wire.Event, 0, len(evs)-dropped)
	for i, e := range evs {
		if keep[i] {
			c.Metadata.TurnEvents = append(c.Metadata.TurnEvents, e)
		}
	}
	t := markTruncated(&c)
	t.EventsDropped += dropped
	t.BytesDropped += droppedBytes
	return &c
}

// cutResponse returns a copy of obs whose response (in the metadata and in
// the turn_complete event) is shortened to save excess bytes.
func cutResponse(obs *wire.Observation, excess int64) *wire.Observation {
	c := *obs
	resp := c.ResponseText()
	keep := len(resp) - int(min(int64(len(resp)), (excess+1)/2))
	for keep > 0 && !utf8.RuneStart(resp[keep]) {
		keep--
	}
	short := resp[:keep]
	c.Metadata.Response = &short
	c.Metadata.TurnEvents = append([]wire.Event(nil), obs.Metadata.TurnEvents...)
	for i, e := range c.Metadata.TurnEvents {
		if tc, ok := e.Data.(*wire.TurnComplete); ok && len(tc.Response) > len(short) {
			cp := *tc
			cp.Response = short
			c.Metadata.TurnEvents[i].Data = &cp
		}
	}
	t := markTruncated(&c)
	t.ResponseBytesDropped += int64(len(resp) - keep)
	return &c
}

// markTruncated gives c its own truncation marker with reason frame_limit.
func markTruncated(c *wire.Observation) *wire.Truncation {
	t := &wire.Truncation{}
	if c.Metadata.Truncated != nil {
		*t = *c.Metadata.Truncated
	}
	t.AddReason(wire.TruncatedFrame)
	c.Metadata.Truncated = t
	return t
}
