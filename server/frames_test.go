package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseWSFrame(t *testing.T) {
	cases := []struct {
		in, code, msg string
	}{
		{`this is not json`, codeInvalidJSON, "Invalid JSON: "},
		{`{"type":"bogus"}`, codeUnknownType, "Unknown message type: bogus"},
		{`{"data":{}}`, codeUnknownType, "Unknown message type: "},
		{`[]`, codeValidation, "Invalid message"},
		{`null`, codeValidation, "Invalid message"},
		{`"reset"`, codeValidation, "Invalid message"},
		{`{"type":7}`, codeValidation, "Invalid message"},
		{`{"type":"state","extra":1}`, codeValidation, "Invalid message"},
		{`{"type":"reset"}`, "", ""},
		{`{"type":"step","data":{"message":"x"}}`, "", ""},
	}
	for _, c := range cases {
		_, err := parseWSFrame([]byte(c.in))
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.in, err)
		case c.code != "" && (err == nil || err.Code != c.code || !strings.HasPrefix(err.Message, c.msg)):
			t.Errorf("%s: got %v, want %s %q", c.in, err, c.code, c.msg)
		}
	}
}

func TestParseAction(t *testing.T) {
	ok := map[string]string{
		`{"message":"hi"}`:                    "hi",
		`{"message":"hi","metadata":{"a":1}}`: "hi",
		`{"message":"","metadata":null}`:      "",
	}
	for in, want := range ok {
		a, err := parseAction(json.RawMessage(in))
		if err != nil || a.Message != want {
			t.Errorf("%s: %+v %v", in, a, err)
		}
	}
	bad := map[string]string{
		`{}`:                           "missing",
		`{"message":5}`:                "string_type",
		`{"message":null}`:             "string_type",
		`{"message":"x","extra":1}`:    "extra_forbidden",
		`{"message":"x","metadata":3}`: "dict_type",
		`[1]`:                          "model_type",
	}
	for in, typ := range bad {
		_, err := parseAction(json.RawMessage(in))
		if err == nil || err.Code != codeValidation {
			t.Errorf("%s: %v, want validation error", in, err)
			continue
		}
		errs := err.Errors
		if errs[0].Type != typ {
			t.Errorf("%s: error type %q, want %q", in, errs[0].Type, typ)
		}
	}
	if _, err := parseAction(nil); err == nil {
		t.Error("missing data accepted")
	}
}

func TestParseReset(t *testing.T) {
	o, err := parseReset(json.RawMessage(`{"seed":3,"episode_id":"ep","extra_kwarg":true}`))
	if err != nil || *o.Seed != 3 || o.EpisodeID != "ep" || o.FullTokenIDs != nil {
		t.Fatalf("%+v %v", o, err)
	}
	for in, want := range map[string]bool{`{"full_token_ids":true}`: true, `{"full_token_ids":false}`: false} {
		if o, err := parseReset(json.RawMessage(in)); err != nil || o.FullTokenIDs == nil || *o.FullTokenIDs != want {
			t.Errorf("%s: %+v %v", in, o, err)
		}
	}
	for in, typ := range map[string]string{
		`{"full_token_ids":"yes"}`: "bool_type",
		`{"seed":-1}`:              "greater_than_equal",
		`{"seed":"x"}`:             "int_type",
		`{"seed":1.5}`:             "int_type",
		`{"episode_id":5}`:         "string_type",
		`{"episode_id":"` + strings.Repeat("x", 256) + `"}`: "string_too_long",
	} {
		_, err := parseReset(json.RawMessage(in))
		if err == nil || err.Errors[0].Type != typ {
			t.Errorf("%s: %v, want %s", in, err, typ)
		}
	}
}

// parseStepFast takes the usual step frame and gives what parseWSFrame and
// parseAction give; every other frame is left to them.
func TestParseStepFastSameAsFull(t *testing.T) {
	frames := []string{`{"type":"step","data":{"message":"reply x"}}`, ` { "data" : {"message":"ü ✓ <b>"} , "type":"step" } `,
		`{"type":"step","data":{"message":""}}`, `{"type":"step","data":{"message":"a\nb"}}`, `{"type":"step","data":{"message":"x","metadata":{}}}`,
		`{"type":"step","data":{"message":"x"},"x":1}`, `{"type":"step","type":"step","data":{"message":"x"}}`, `{"Type":"step","data":{"message":"x"}}`,
		`{"type":"st\u0065p","data":{"message":"x"}}`, `{"type":"step","data":{"Message":"x"}}`, `{"type":"step","data":{"message":5}}`,
		`{"type":"step","data":null}`, `{"type":"step"}`, `{"type":"reset","data":{"message":"x"}}`, `{"type":"step","data":{"message":"x","message":"y"}}`,
		"{\"type\":\"step\",\"data\":{\"message\":\"bad \xff\"}}", `{"type":"step","data":{"message":"nul \u0000"}}`, `{"type":"step","data":{"message":"x"}} x`}
	taken := 0
	for _, in := range frames {
		fast, ok := parseStepFast([]byte(in))
		if !ok {
			continue
		}
		taken++
		f, werr := parseWSFrame([]byte(in))
		if werr != nil || f.Type != frameTypeStep {
			t.Errorf("%s: fast %+v, full frame %+v %v", in, fast, f, werr)
			continue
		}
		full, werr := parseAction(f.Data)
		if werr != nil || !reflect.DeepEqual(fast, full) {
			t.Errorf("%s: fast %+v, full %+v %v", in, fast, full, werr)
		}
	}
	if taken < 3 {
		t.Errorf("the fast path took %d of the plain step frames", taken)
	}
}
