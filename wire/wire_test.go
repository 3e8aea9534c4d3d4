package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEventRoundTripEveryType(t *testing.T) {
	errText := "boom"
	ms := 1.5
	payloads := []Payload{
		&TextOutput{Text: "hello <b>"},
		&ToolCall{ToolName: "add", Arguments: json.RawMessage(`{"a":2,"b":3}`), CallID: "c1", Server: "env"},
		&ToolResult{ToolName: "add", Result: "5", Error: &errText, CallID: "c1", DurationMS: &ms},
		&LLMRequest{Model: "m", Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`)},
		&LLMResponse{Content: "hi", Model: "m", FinishReason: "stop", Usage: &TokenUsage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		&LLMChunk{Content: "h", Index: 3, Thought: true, MessageID: "m1"},
		&Error{Message: "bad", Recoverable: true},
		&TurnComplete{Response: "done", Done: true, Cancelled: true, Extra: Extra{"stop_reason": "end_turn"}},
		&EnvEvent{Index: 1, Name: "ci", Trigger: TriggerAfterTool, Detail: "run_ci", Effect: EffectDeliver, Delivery: DeliveryMidTurn, Text: "CI failed"},
		&Egress{Method: "CONNECT", Host: "pypi.org", Port: 443, Allowed: true, Status: 200, Address: "151.101.0.223:443", BytesUp: 10, BytesDown: 20, DurationMS: 1.5},
	}
	seen := map[EventType]bool{}
	for _, p := range payloads {
		e := Event{Type: p.EventType(), Timestamp: 1790000000.25, Data: p, Turn: 2, Origin: OriginBridge}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), `{"type":"`+string(p.EventType())+`","timestamp":1790000000.25,"data":{`) ||
			!strings.HasSuffix(string(b), `,"turn":2,"source":"bridge"}`) {
			t.Errorf("field order: %s", b)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		b2, _ := json.Marshal(back)
		if string(b2) != string(b) {
			t.Errorf("round trip:\n %s\n %s", b, b2)
		}
		if reflect.TypeOf(back.Data) != reflect.TypeOf(p) {
			t.Errorf("decoded %T, want %T", back.Data, p)
		}
		seen[p.EventType()] = true
	}
	for _, typ := range EventTypes {
		if !seen[typ] {
			t.Errorf("no round trip for %s", typ)
		}
	}
}

func TestToolCallWireShape(t *testing.T) {
	b, _ := json.Marshal(New(OriginHarness, &ToolCall{ToolName: "add"}))
	if !strings.Contains(string(b), `"data":{"tool_name":"add","arguments":{}}`) {
		t.Errorf("absent arguments must be {}: %s", b)
	}
	b, _ = json.Marshal(New(OriginBridge, &ToolResult{ToolName: "add", Result: "5"}))
	if !strings.Contains(string(b), `"data":{"tool_name":"add","result":"5","error":null}`) {
		t.Errorf("error must be written as null: %s", b)
	}
}

func TestExtraKeptAndNeverOverridesSchema(t *testing.T) {
	in := `{"type":"tool_call","timestamp":1,"data":{"tool_name":"add","arguments":{"a":1},"title":"Add <x>","n":12345678901234567890}}`
	var e Event
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	tc := e.Data.(*ToolCall)
	if tc.ToolName != "add" || string(tc.Arguments) != `{"a":1}` {
		t.Fatalf("schema fields: %+v", tc)
	}
	if string(tc.Extra["title"].(json.RawMessage)) != `"Add <x>"` || string(tc.Extra["n"].(json.RawMessage)) != "12345678901234567890" {
		t.Fatalf("extra: %v", tc.Extra)
	}
	tc.Extra["tool_name"] = "evil"
	b, _ := MarshalNoEscape(e)
	want := `"data":{"tool_name":"add","arguments":{"a":1},"n":12345678901234567890,"title":"Add <x>"}`
	if !strings.Contains(string(b), want) {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

func TestUnknownTypeKeptRaw(t *testing.T) {
	var e Event
	if err := json.Unmarshal([]byte(`{"type":"later_thing","data":{"x":[1,2]}}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.Timestamp == 0 {
		t.Error("missing timestamp must become now")
	}
	b, _ := json.Marshal(e)
	if !strings.Contains(string(b), `"type":"later_thing"`) || !strings.Contains(string(b), `"data":{"x":[1,2]}`) {
		t.Errorf("unknown event not kept: %s", b)
	}
	if err := Validate(e.Data, nil); err == nil {
		t.Error("an unknown type must not validate")
	}
}

func TestBadDataIsAnError(t *testing.T) {
	for _, in := range []string{
		`{"type":"tool_call","data":[1]}`,
		`{"type":"tool_call","data":{"tool_name":7}}`,
		`{"type":"text_output","data":"x"}`,
		`{"type":"llm_chunk","data":{"index":"1"}}`,
	} {
		var e Event
		if err := json.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestValidateNamesTheMissingField(t *testing.T) {
	cases := map[string]string{
		`{"name":"add"}`:                       `tool_call data has no "tool_name"`,
		`{"tool_name":""}`:                     `empty "tool_name"`,
		`{"tool_name":"add","arguments":[1]}`:  `"arguments" must be a JSON object`,
		`{"tool_name":"add","arguments":{}}`:   "",
		`{"tool_name":"add"}`:                  "",
		`{"tool_name":"add","arguments":null}`: "",
	}
	for raw, want := range cases {
		p, err := DecodePayload(EventToolCall, json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		err = Validate(p, json.RawMessage(raw))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", raw, err, want)
		}
	}
	if err := Validate(&Error{}, json.RawMessage(`{"recoverable":true}`)); err == nil {
		t.Error("an error event without message must not validate")
	}
}

func TestObservationWireForm(t *testing.T) {
	r := 0.5
	resp := "ok"
	o := Observation{Reward: &r, Done: true, Metadata: Metadata{
		EpisodeID: "ep", TurnNumber: 1, Response: &resp, ErrorType: FailureTurnTimeout,
		TurnEvents: []Event{{Type: EventTextOutput, Timestamp: 1, Data: &TextOutput{Text: "a"}, Turn: 1, Origin: OriginHarness}},
		Exit:       &ExitStatus{Code: -1, Signal: "SIGKILL"},
	}}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	md := `{"episode_id":"ep","turn_number":1,"response":"ok","error_type":"turn_timeout","exit":{"code":-1,"signal":"SIGKILL"},` +
		`"turn_events":[{"type":"text_output","timestamp":1,"data":{"text":"a"},"turn":1,"source":"harness"}]}`
	want := `{"observation":{"metadata":` + md + `},"reward":0.5,"done":true,"metadata":` + md + `}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Observation
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ResponseText() != "ok" || *back.Reward != 0.5 || back.Metadata.TurnEvents[0].Data.(*TextOutput).Text != "a" {
		t.Errorf("decoded %+v", back)
	}
	o.Reward = nil
	b, _ = json.Marshal(o)
	if !strings.Contains(string(b), `"reward":null`) {
		t.Errorf("nil reward: %s", b)
	}
}

func TestMarshalNoEscape(t *testing.T) {
	b, _ := MarshalNoEscape(map[string]string{"a": "<x> & y"})
	if string(b) != `{"a":"<x> & y"}` {
		t.Errorf("%s", b)
	}
}

// Raw JSON of a producer holding invalid UTF-8 is encoded as valid UTF-8,
// as found by FuzzEventDecode.
func TestEventEncodingIsValidUTF8(t *testing.T) {
	for _, in := range []string{
		"{\"type\":\"tool_call\",\"data\":{\"tool_name\":\"a\",\"arguments\":{\"\xff\":\"\xfe\"},\"x\":\"\xff\"}}",
		"{\"type\":\"llm_request\",\"data\":{\"messages\":[\"\xff\"]}}",
		"{\"type\":\"no_such_type\",\"data\":{\"\xff\":{}}}",
	} {
		var e Event
		if err := json.Unmarshal([]byte(in), &e); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(e)
		if err != nil || !utf8.Valid(b) || !json.Valid(b) {
			t.Errorf("%q: encoded as %q (%v)", in, b, err)
		}
	}
}
