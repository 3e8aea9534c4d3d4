package harness

import (
	"context"
	"errors"
)

// Deliverer is an optional interface of an Adapter whose protocol can take
// input from the environment during a running turn (the event queue's
// deliver effect): the line protocol's event message, a queued ACP
// prompt, a stream-json user message. The session finds it by type
// assertion; an adapter without it has the text appended to the next
// turn's message instead.
type Deliverer interface {
	// Deliver hands text to the harness as part of the running turn. It
	// returns ErrNoTurn when no turn is under way (before the turn is
	// live, or after it ended) and ErrCannotDeliver when this harness
	// cannot take input mid-turn (a capability its protocol lacks). It may
	// be called concurrently with Turn, never with Start or Stop.
	Deliver(ctx context.Context, text string) error
}

// ErrCannotDeliver says the harness cannot take input during a turn.
var ErrCannotDeliver = errors.New("the harness's protocol cannot take input during a turn")
