package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// EventType is the kind of an event (RFC 005 HarnessEventType).
type EventType string

// Event types.
const (
	EventLLMRequest   EventType = "llm_request"
	EventLLMResponse  EventType = "llm_response"
	EventLLMChunk     EventType = "llm_chunk"
	EventToolCall     EventType = "tool_call"
	EventToolResult   EventType = "tool_result"
	EventTextOutput   EventType = "text_output"
	EventError        EventType = "error"
	EventTurnComplete EventType = "turn_complete"
	// EventEgress is harnessd's own type, not RFC 005's: one connection a
	// sandboxed harness made through the egress proxy (network.egress:
	// allow), allowed or refused.
	EventEgress EventType = "egress"
)

// EventTypes lists every event type, in the order the documentation uses.
var EventTypes = []EventType{
	EventTextOutput, EventToolCall, EventToolResult, EventLLMRequest, EventLLMResponse,
	EventLLMChunk, EventError, EventTurnComplete, EventEgress, EventEnv,
}

// Valid reports whether t is one of the RFC 005 event types or harnessd's
// egress and env_event.
func (t EventType) Valid() bool {
	switch t {
	case EventLLMRequest, EventLLMResponse, EventLLMChunk, EventToolCall, EventToolResult,
		EventTextOutput, EventError, EventTurnComplete, EventEgress, EventEnv:
		return true
	}
	return false
}

// Origin says who reported an event. On the wire it is the event's
// "source" field.
type Origin string

// Event origins.
const (
	// OriginHarness: the harness reported it about itself. Such events are
	// the harness's own account, not evidence.
	OriginHarness Origin = "harness"
	// OriginBridge: the tool bridge saw it — the authoritative record of
	// environment tool use.
	OriginBridge Origin = "bridge"
	// OriginGateway: the model gateway saw it — the authoritative record of
	// model calls.
	OriginGateway Origin = "gateway"
	// OriginDaemon: harnessd itself (turn ends, failures).
	OriginDaemon Origin = "daemon"
)

// Origins lists every origin.
var Origins = []Origin{OriginHarness, OriginBridge, OriginGateway, OriginDaemon}

// Event is one thing that happened during a turn: RFC 005's HarnessEvent
// plus the turn number and the origin.
//
// On the wire: {"type", "timestamp", "data", "turn", "source"} in that order;
// data is always an object; turn and source are omitted when zero.
type Event struct {
	// Type is the event's kind; it always equals Data.EventType() for
	// events built with New.
	Type EventType
	// Timestamp is the time of the event in unix seconds; zero means "not
	// stamped yet" (the session stamps events as it records them).
	Timestamp float64
	// Data is the event's payload: a *TextOutput, *ToolCall, ... matching
	// Type, or *Unknown for a type this version does not know. Nil is
	// written as {}.
	Data Payload
	// Turn is the 1-based turn the event belongs to (0: not yet assigned).
	Turn int
	// Origin says who reported the event ("" is written as absent).
	Origin Origin
}

// Now returns the current time as unix seconds.
func Now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// New returns an event of p's type from origin, stamped now.
func New(origin Origin, p Payload) Event {
	return Event{Type: p.EventType(), Timestamp: Now(), Data: p, Origin: origin}
}

func (e Event) String() string {
	return fmt.Sprintf("%s(turn %d, %s)", e.Type, e.Turn, e.Origin)
}

// MarshalJSON writes the RFC 005 field order with data always an object.
func (e Event) MarshalJSON() ([]byte, error) {
	w := getWriter()
	defer putWriter(w)
	if err := w.event(&e); err != nil {
		return nil, err
	}
	return bytes.Clone(w.buf.Bytes()), nil
}

// UnmarshalJSON decodes an event. Data is decoded into the payload type of
// the event's type (*Unknown for other types); a missing timestamp becomes
// now.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w struct {
		Type      EventType       `json:"type"`
		Timestamp float64         `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
		Turn      int             `json:"turn"`
		Origin    Origin          `json:"source"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	p, err := DecodePayload(w.Type, w.Data)
	if err != nil {
		return fmt.Errorf("%s data: %w", w.Type, err)
	}
	if w.Timestamp == 0 {
		w.Timestamp = Now()
	}
	*e = Event{Type: w.Type, Timestamp: w.Timestamp, Data: p, Turn: w.Turn, Origin: w.Origin}
	return nil
}

// DecodePayload decodes the data object of an event of type t into its
// payload type; an empty or null data gives the zero payload. A type this
// version does not know gives *Unknown holding the raw object.
func DecodePayload(t EventType, data json.RawMessage) (Payload, error) {
	p := NewPayload(t)
	if len(bytes.TrimSpace(data)) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		if u, ok := p.(*Unknown); ok {
			u.Raw = json.RawMessage("{}")
		}
		return p, nil
	}
	if err := json.Unmarshal(data, p); err != nil {
		return nil, err
	}
	return p, nil
}
