package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeCheckedNamesTheField(t *testing.T) {
	for _, c := range []struct {
		t    EventType
		data string
		want string
	}{
		{EventToolCall, `{"name":"add"}`, `no "tool_name"`},
		{EventToolCall, `{"tool_name":3}`, `"tool_name" must be a string, got number`},
		{EventTurnComplete, `{"response":1}`, `"response" must be a string, got number`},
		{EventTurnComplete, `{"done":"yes"}`, `"done" must be a boolean, got string`},
		{EventToolResult, `{"tool_name":"a","error":{}}`, `"error" must be a string, got object`},
		{EventTextOutput, `[1]`, `must be a JSON object`},
		{EventTextOutput, ``, `no "text"`},
		{EventTextOutput, `{"text":"a",`, `text_output data:`},
	} {
		_, err := DecodeChecked(c.t, json.RawMessage(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want %q", c.t, c.data, err, c.want)
		}
	}
	p, err := DecodeChecked(EventTurnComplete, nil)
	if tc, ok := p.(*TurnComplete); err != nil || !ok || tc.Response != "" || tc.Done {
		t.Errorf("absent turn_complete data: %#v %v", p, err)
	}
}

func TestSetExtraAndRawJSON(t *testing.T) {
	c := &ToolCall{ToolName: "x", Arguments: RawJSON(map[string]any{"b": 1, "a": "<&>"})}
	SetExtra(c, "title", "T")
	b, err := MarshalNoEscape(New(OriginHarness, c).Data)
	if err != nil || string(b) != `{"tool_name":"x","arguments":{"a":"<&>","b":1},"title":"T"}` {
		t.Errorf("%s %v", b, err)
	}
	if RawJSON(nil) != nil || RawJSON(make(chan int)) != nil {
		t.Error("RawJSON of nothing or of what cannot be encoded must be nil")
	}
	SetExtra(&Unknown{Type: "x"}, "k", 1) // no effect, no panic
}

// Frames keep the byte form harnessd's map literals had: sorted keys.
func TestFrameBytes(t *testing.T) {
	active, max := 3, 3
	b, _ := MarshalNoEscape(Frame[ErrorData]{Type: FrameError, Data: ErrorData{
		Message: "full", Code: "CAPACITY_REACHED", ActiveSessions: &active, MaxSessions: &max}})
	if want := `{"data":{"active_sessions":3,"code":"CAPACITY_REACHED","max_sessions":3,"message":"full"},"type":"error"}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, _ = MarshalNoEscape(Frame[SessionStarted]{Type: FrameSessionStarted, Data: SessionStarted{SessionID: "s", Harness: "h"}})
	if want := `{"data":{"harness":"h","session_id":"s"},"type":"session_started"}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// DecodeChecked refuses data a trainer's JSON decoder could not take, naming
// why (a harness's line then ends its episode as a protocol error, whose
// observation the trainer gets), and writes a lone surrogate escape kept in
// a raw value as \ufffd. Controls: 100 levels and a valid pair pass.
func TestDecodeCheckedRefusesWhatATrainerCannotDecode(t *testing.T) {
	nested := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	for data, want := range map[string]string{
		`{"tool_name":"x","arguments":` + nested(2000) + `}`:                    "nested deeper than 128 levels",
		`{"tool_name":"x","arguments":{"n":` + strings.Repeat("1", 5000) + `}}`: "number literal longer than 1000",
		`{"tool_name":"x","arguments":{"n":1e400}}`:                             "beyond float64's range",
	} {
		if _, err := DecodeChecked(EventToolCall, json.RawMessage(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s…: %v, want %q", data, err, want)
		}
	}
	p, err := DecodeChecked(EventToolCall, json.RawMessage(`{"tool_name":"x","arguments":`+nested(100)+`}`))
	if err != nil || len(p.(*ToolCall).Arguments) != len(nested(100)) {
		t.Fatalf("control, 100 levels: %v", err)
	}
	p, err = DecodeChecked(EventToolCall, json.RawMessage(`{"tool_name":"x","arguments":{"s":"a\ud800b","ok":"\ud83d\ude00"},"note":"q\udc80"}`))
	if err != nil {
		t.Fatal(err)
	}
	c := p.(*ToolCall)
	if got := string(c.Arguments); got != `{"s":"a\ufffdb","ok":"\ud83d\ude00"}` {
		t.Errorf("arguments %s", got)
	}
	if b, _ := json.Marshal(c.Extra["note"]); !strings.Contains(string(b), `q\ufffd`) && !strings.Contains(string(b), "q\ufffd") {
		t.Errorf("extra note %s", b)
	}
}
