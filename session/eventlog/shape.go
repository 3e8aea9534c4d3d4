package eventlog

import (
	"encoding/json"
	"fmt"

	"github.com/harnessd/harnessd/internal/jsonshape"
	"github.com/harnessd/harnessd/wire"
)

// shaped returns e as a trainer may be given it, with its encoded size
// (eventSize). An event whose data a trainer's JSON decoder could not take
// (jsonshape.Check: an agent's tool input nested 2,000 levels deep, a number
// of 5,000 digits: Python's decoder raises, and the trainer loses the turn's
// observation) becomes the daemon's recoverable error event naming it;
// lone surrogate escapes kept in raw values (tool arguments, extra fields)
// become \ufffd. Text events, measured without encoding, hold decoded
// strings only and pass as they are.
func shaped(e wire.Event) (wire.Event, int64) {
	if n, ok := fastSize(e); ok {
		return e, n
	}
	b, err := wire.MarshalNoEscape(e)
	if err != nil {
		return e, eventOverhead
	}
	if err := jsonshape.Check(b); err != nil {
		n := wire.ErrorEvent(wire.OriginDaemon, fmt.Sprintf("harnessd dropped a %s event from %s: its data has %v, which a trainer's JSON decoder fails on", e.Type, e.Origin, err), true)
		n.Timestamp, n.Turn = e.Timestamp, e.Turn
		return n, eventSize(n)
	}
	if jsonshape.HasLoneSurrogate(b) {
		fixed := jsonshape.ReplaceLoneSurrogates(b)
		var ne wire.Event
		if json.Unmarshal(fixed, &ne) == nil {
			return ne, int64(len(fixed))
		}
	}
	return e, int64(len(b))
}
