package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// EventType is the kind of a harness event (RFC 005 HarnessEventType).
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
)

// Valid reports whether t is one of the RFC 005 event types.
func (t EventType) Valid() bool {
	switch t {
	case EventLLMRequest, EventLLMResponse, EventLLMChunk, EventToolCall, EventToolResult,
		EventTextOutput, EventError, EventTurnComplete:
		return true
	}
	return false
}

// Source says who reported an event.
type Source string

// Event sources.
const (
	// SourceHarness: the harness reported it about itself.
	SourceHarness Source = "harness"
	// SourceBridge: the tool bridge saw it — the authoritative record of
	// environment tool use.
	SourceBridge Source = "bridge"
	// SourceDaemon: harnessd itself (turn ends, failures).
	SourceDaemon Source = "daemon"
)

// Event is one thing that happened during a turn, as RFC 005 HarnessEvent
// plus the turn number and the source.
type Event struct {
	Type      EventType      `json:"type"`
	Timestamp float64        `json:"timestamp"`
	Data      map[string]any `json:"data"`
	Turn      int            `json:"turn,omitempty"`
	Source    Source         `json:"source,omitempty"`
}

// Now returns the current time as unix seconds.
func Now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// NewEvent returns an event stamped now.
func NewEvent(t EventType, src Source, data map[string]any) Event {
	if data == nil {
		data = map[string]any{}
	}
	return Event{Type: t, Timestamp: Now(), Data: data, Source: src}
}

// MarshalJSON writes the RFC 005 field order with data always an object.
func (e Event) MarshalJSON() ([]byte, error) {
	w := writers.Get().(*jsonWriter)
	defer func() {
		w.buf.Reset()
		writers.Put(w)
	}()
	if err := w.event(&e); err != nil {
		return nil, err
	}
	return bytes.Clone(w.buf.Bytes()), nil
}

// UnmarshalJSON decodes an event; a missing timestamp becomes now.
func (e *Event) UnmarshalJSON(b []byte) error {
	type wire Event
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Timestamp == 0 {
		w.Timestamp = Now()
	}
	if w.Data == nil {
		w.Data = map[string]any{}
	}
	*e = Event(w)
	return nil
}

// ErrorEvent returns an error event with the given message.
func ErrorEvent(src Source, msg string, recoverable bool) Event {
	return NewEvent(EventError, src, map[string]any{"message": msg, "recoverable": recoverable})
}

func (e Event) String() string {
	return fmt.Sprintf("%s(turn %d, %s)", e.Type, e.Turn, e.Source)
}
