package wire

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// The fast path writes exactly what the generic encoder writes for the same
// payload; a payload with extra fields is left to the generic path.
func TestPayloadFastPathSameBytes(t *testing.T) {
	texts := []string{"", "x", "plain text", `quote " and \ backslash`, "tab\tnew\nline\r", "<b>&amp;</b>",
		"ünïcödé ✓", "\u2028\u2029", "nul \x00 del \x7f", "bad utf8 \xff\xfe", string([]byte{0xe2, 0x82})}
	var payloads []Payload
	for _, s := range texts {
		payloads = append(payloads,
			&TextOutput{Text: s},
			&TurnComplete{Response: s}, &TurnComplete{Response: s, Done: true, Cancelled: true},
			&Error{Message: s}, &Error{Message: s, Recoverable: true},
			&LLMChunk{Content: s, Index: 3}, &LLMChunk{Content: s, Thought: true, MessageID: s + "id"},
			&TextOutput{Text: s, Extra: Extra{"k": s}})
	}
	for _, p := range payloads {
		e := Event{Type: p.EventType(), Timestamp: 1.25, Data: p, Turn: 2, Origin: OriginHarness}
		got, err := MarshalNoEscape(e)
		if err != nil {
			t.Fatal(err)
		}
		data, err := MarshalNoEscape(p) // the generic path
		if err != nil {
			t.Fatal(err)
		}
		want := `{"type":` + strconv.Quote(string(p.EventType())) + `,"timestamp":1.25,"data":` + string(data) + `,"turn":2,"source":"harness"}`
		if string(got) != want {
			t.Errorf("%T %+v:\n got %s\nwant %s", p, p, got, want)
		}
	}
}

func BenchmarkEventEncode(b *testing.B) {
	evs := []Event{
		{Type: EventTextOutput, Timestamp: 1796174366.230228, Data: &TextOutput{Text: "x"}, Turn: 1, Origin: OriginHarness},
		{Type: EventTurnComplete, Timestamp: 1796174366.2302427, Data: &TurnComplete{Response: "x"}, Turn: 1, Origin: OriginHarness},
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range evs {
			if _, err := MarshalNoEscape(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// decodeFast and EventParts give what the full decode gives, for inputs
// they take, and leave the rest to it.
func TestDecodeFastSameAsFullDecode(t *testing.T) {
	datas := []string{`{}`, `{"text":"x"}`, `{"text":""}`, ` { "text" : "a b" } `, `{"text":"ü✓"}`, `{"text":"a\nb"}`,
		`{"text":"\u0041"}`, `{"text":"x","text":"y"}`, `{"Text":"x"}`, `{"text":1}`, `{"text":null}`, `{"text":"x","k":1}`,
		`{"text":"x"} x`, `{"text":"x",}`, `{"text" "x"}`, `{"text":"\xff"}`, "{\"text\":\"a\tb\"}", `{"response":"x","done":false}`,
		`{"done":true,"response":"x","cancelled":true}`, `{"response":"x","done":"no"}`, `{"response":"x","done":truex}`,
		`{"response":"x","done":null}`, `{"response":"x","extra":[1]}`, `{"response":"x","done":false,"done":true}`,
		`{"DONE":true}`, `{"response":"x"}`, `{"response":"a}b","done":false}`, `{"response":"x"}}`, `{`, `{"response":"x"`}
	for _, typ := range []EventType{EventTextOutput, EventTurnComplete} {
		for _, d := range datas {
			fast, ok := decodeFast(typ, []byte(d))
			if !ok {
				continue
			}
			full, err := DecodePayload(typ, []byte(d))
			if err == nil {
				err = Validate(full, []byte(d))
			}
			if err != nil || !reflect.DeepEqual(fast, full) {
				t.Errorf("%s %s: fast %#v, full %#v (%v)", typ, d, fast, full, err)
			}
		}
	}
	lines := []string{`{"type":"text_output","data":{"text":"x"}}`, `{"data":{"text":"x"},"timestamp":1.5,"type":"text_output"}`,
		`{"type":"turn_complete"}`, `{"Type":"text_output","data":{}}`, `{"type":"a","type":"b"}`, `{"type":"a","data":1,"data":2}`,
		`{"type":"t\u0065xt_output"}`, `{"type":5}`, `{"type":null}`, `{"x":{"type":"y"},"type":"z"}`, `{"\u0074ype":"a"}`,
		`{"ty\u212ape":"a"}`, "{\"\u212aey\":1,\"type\":\"a\"}", `[]`, `"s"`, `{}`, ` {"type" : "a" , "data" : [1,{"b":"}"}] } `}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("test line %s is not JSON", l)
		}
		typ, data, ok := EventParts([]byte(l))
		if !ok {
			continue
		}
		var w struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &w); err != nil || w.Type != typ || string(w.Data) != string(data) {
			t.Errorf("%s: parts %q %s, full %q %s (%v)", l, typ, data, w.Type, w.Data, err)
		}
	}
	// The common lines do take the fast paths.
	if _, _, ok := EventParts([]byte(lines[1])); !ok {
		t.Error("the test agent's line did not take EventParts")
	}
	if _, ok := decodeFast(EventTurnComplete, []byte(`{"done":false,"response":"x"}`)); !ok {
		t.Error("a plain turn_complete did not take decodeFast")
	}
}

func BenchmarkDecodeLine(b *testing.B) {
	lines := [][]byte{[]byte(`{"data":{"text":"x"},"timestamp":1796174366.230228,"type":"text_output"}`),
		[]byte(`{"data":{"done":false,"response":"x"},"timestamp":1796174366.2302427,"type":"turn_complete"}`)}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if !json.Valid(l) {
				b.Fatal("invalid")
			}
			typ, data, ok := EventParts(l)
			if !ok {
				b.Fatal("not fast")
			}
			if _, err := DecodeChecked(EventType(typ), data); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDecodeLineFull(b *testing.B) {
	lines := [][]byte{[]byte(`{"data":{"text":"x"},"timestamp":1796174366.230228,"type":"text_output"}`),
		[]byte(`{"data":{"done":false,"response":"x"},"timestamp":1796174366.2302427,"type":"turn_complete"}`)}
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			var w struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(l, &w); err != nil {
				b.Fatal(err)
			}
			p, err := DecodePayload(EventType(w.Type), w.Data)
			if err == nil {
				err = Validate(p, w.Data)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
