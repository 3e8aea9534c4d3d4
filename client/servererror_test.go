package client

import (
	"encoding/json"
	"testing"
)

// A validation error's text names each refused field and why: it was
// "Invalid message (code: VALIDATION_ERROR)" whatever the field, so chat
// printed no reason where run did.
func TestServerErrorNamesItsFields(t *testing.T) {
	se := decodeServerError(json.RawMessage(`{"message":"Invalid message","code":"VALIDATION_ERROR","errors":[
		{"type":"value_error","loc":["data","episode_id"],"msg":"String should not contain control characters","input":"a\u0001"},
		{"type":"value_error","loc":["data","sampling","temperature"],"msg":"must not be negative"}]}`))
	want := "server error: Invalid message (code: VALIDATION_ERROR): data.episode_id: String should not contain control characters; " +
		"data.sampling.temperature: must not be negative"
	if got := se.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Without field errors the text is as before.
	se = decodeServerError(json.RawMessage(`{"message":"No active episode","code":"EXECUTION_ERROR"}`))
	if got := se.Error(); got != "server error: No active episode (code: EXECUTION_ERROR)" {
		t.Errorf("got %q", got)
	}
}
