package gateway

// EnvEvent is an event of the environment's event queue as the export
// lists it: when it fired among the episode's calls, and what it did.
// Session reports them (through the episode); the gateway only places them
// among its calls.
type EnvEvent struct {
	// Seq numbers the episode's fired events from 1.
	Seq int `json:"seq"`
	// Turn is the turn it fired in.
	Turn int `json:"turn"`
	// Index is the event's position in the configuration's events.
	Index int `json:"index"`
	// Name is its configured name, if any.
	Name string `json:"name,omitempty"`
	// Trigger, Effect and Delivery are the env_event's (docs/protocol.md).
	Trigger  string `json:"trigger"`
	Effect   string `json:"effect"`
	Delivery string `json:"delivery,omitempty"`
	// Text is the message or delivered text, if any.
	Text string `json:"text,omitempty"`
	// AfterCall is the index of the last model call handed out when it
	// fired (0: before any); the first call after it, CallIndex, is the
	// first whose prompt can hold its effect (0: no call came after).
	AfterCall int `json:"after_call"`
	CallIndex int `json:"call_index,omitempty"`
}

// NoteEvent records that an event of the environment's queue fired now,
// between the calls handed out so far and the next.
func (g *Gateway) NoteEvent(e EnvEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e.AfterCall = g.next
	e.CallIndex = 0
	g.events = append(g.events, e)
}

// placeEvents fills each event's CallIndex from the calls (the first call
// handed out after it that was recorded) and marks the prompt span of that
// call in every chain holding it with the event's Seq.
func placeEvents(events []EnvEvent, calls []*call, chains []Chain) []EnvEvent {
	out := make([]EnvEvent, len(events))
	copy(out, events)
	for i := range out {
		for _, c := range calls { // index order
			if c.index > out[i].AfterCall {
				out[i].CallIndex = c.index
				break
			}
		}
	}
	for ci := range chains {
		ch := &chains[ci]
		for si := range ch.Spans {
			sp := &ch.Spans[si]
			if sp.Kind != SpanPrompt {
				continue
			}
			for _, e := range out {
				if e.CallIndex == sp.CallIndex {
					sp.Events = append(sp.Events, e.Seq)
				}
			}
		}
	}
	return out
}
