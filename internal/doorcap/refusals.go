package doorcap

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ReasonBodyTimeout: a request body not read whole within the door's body
// read timeout was dropped (a *BodyTimeoutError), as the refusals count
// it.
const ReasonBodyTimeout = "door_body_timeout"

// Refusal is the process-wide count of one door's refusals for one reason,
// over every episode's door of that name since the process started.
type Refusal struct {
	// Door is the door's name as its refusals say it, with spaces as
	// underscores ("model_gateway", "bridge", "egress").
	Door string
	// Reason is the refusal's reason (ReasonCap, ReasonReserve,
	// ReasonBodies, ReasonBodyTimeout, ReasonDecodeCost, or a door's own, e.g. the bridge's
	// session cap).
	Reason string
	// Count is how many there were.
	Count uint64
}

// refusals counts refusals by door and reason: a few dozen keys at most,
// since door names and reasons are the code's own constants.
var refusals sync.Map // refusalKey -> *atomic.Uint64

type refusalKey struct{ door, reason string }

// CountRefusal adds one to door's count of reason (door as given to
// NewLimit or NewBudget). Doors call it where they refuse; every door's
// own refusals here are counted through it.
func CountRefusal(door, reason string) {
	counter(door, reason).Add(1)
}

// Expect makes door's count of each reason exist (at 0) before any
// refusal, so that a metrics series is there from the start.
func Expect(door string, reasons ...string) {
	for _, r := range reasons {
		counter(door, r)
	}
}

func counter(door, reason string) *atomic.Uint64 {
	k := refusalKey{strings.ReplaceAll(door, " ", "_"), reason}
	if c, ok := refusals.Load(k); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := refusals.LoadOrStore(k, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

// Refusals returns every door's counts, sorted by door and reason.
func Refusals() []Refusal {
	var out []Refusal
	refusals.Range(func(k, v any) bool {
		key := k.(refusalKey)
		out = append(out, Refusal{Door: key.door, Reason: key.reason, Count: v.(*atomic.Uint64).Load()})
		return true
	})
	slices.SortFunc(out, func(a, b Refusal) int {
		if c := strings.Compare(a.Door, b.Door); c != 0 {
			return c
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return out
}
