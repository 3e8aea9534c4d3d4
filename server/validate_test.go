package server

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseResetRefusesControlCharacters(t *testing.T) {
	for _, id := range []string{"a\x00b", "tab\there", "new\nline", "del\x7f", "c1\u0085", strings.Repeat("é", 256)} {
		data, _ := json.Marshal(map[string]any{"episode_id": id})
		_, werr := parseReset(data)
		if werr == nil {
			t.Errorf("episode_id %q accepted", id)
			continue
		}
		if werr.Code != codeValidation || len(werr.Errors) != 1 || werr.Errors[0].Loc[0] != "episode_id" {
			t.Errorf("episode_id %q: %+v, want a VALIDATION_ERROR at episode_id", id, werr)
		}
	}
	for _, id := range []string{"ep-1", "épisode ✓", strings.Repeat("x", 255)} {
		data, _ := json.Marshal(map[string]any{"episode_id": id})
		if o, werr := parseReset(data); werr != nil || o.EpisodeID != id {
			t.Errorf("episode_id %q refused: %+v", id, werr)
		}
	}
}

func TestParseActionMessageText(t *testing.T) {
	ok := "line one\n\tline two\r\n"
	a, werr := parseAction(json.RawMessage(`{"message":` + string(marshal(ok)) + `}`))
	if werr != nil || a.Message != ok {
		t.Fatalf("a message with tabs and newlines refused: %+v", werr)
	}
	for _, bad := range []string{"nul\x00", "bell\a", "esc\x1b[2J"} {
		_, werr := parseAction(json.RawMessage(`{"message":`+string(marshal(bad))+`}`), "body", "action")
		if werr == nil {
			t.Errorf("message %q accepted", bad)
			continue
		}
		fe := werr.Errors[0]
		if fe.Type != "string_pattern_mismatch" || len(fe.Loc) != 3 || fe.Loc[2] != "message" || !strings.Contains(fe.Msg, "control characters") {
			t.Errorf("message %q: %+v", bad, fe)
		}
	}
	long := strings.Repeat("x", 10_000) + "\x00"
	_, werr = parseAction(json.RawMessage(`{"message":` + string(marshal(long)) + `}`))
	if werr == nil || len(werr.Errors[0].Input.(string)) > maxEchoedInput+len("…") {
		t.Errorf("a long bad message is quoted back whole: %+v", werr)
	}
}

func TestParseHarnessFrameContent(t *testing.T) {
	if _, werr := parseHarnessFrame(inbound{data: []byte(`{"type":"message","content":"a\u0000b"}`)}); werr == nil ||
		werr.Code != codeValidation || werr.Errors[0].Loc[0] != "content" {
		t.Errorf("a NUL in content: %+v", werr)
	}
	if msg, werr := parseHarnessFrame(inbound{data: []byte(`{"type":"message","content":"a\nb"}`)}); werr != nil || *msg != "a\nb" {
		t.Errorf("a newline in content refused: %+v", werr)
	}
}

func TestCheckSessionID(t *testing.T) {
	if werr := checkSessionID("0b1c-22", "query", "session_id"); werr != nil {
		t.Errorf("a plain session id refused: %+v", werr)
	}
	for _, id := range []string{"x\x00", strings.Repeat("s", 129), "bad\xffutf8"} {
		werr := checkSessionID(id, "query", "session_id")
		if werr == nil || werr.Code != codeValidation || werr.Errors[0].Loc[1] != "session_id" {
			t.Errorf("session id %q: %+v", id, werr)
		}
	}
}
