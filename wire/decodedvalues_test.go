package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodedValues(t *testing.T) {
	for in, want := range map[string]int{
		``:                                    0,
		`"x"`:                                 0,
		`{}`:                                  1,
		`[{},{},[]]`:                          4,
		`{"a":"{[","b":[1,2]}`:                4,
		`{"a":"q\"{[","b":{}}`:                2,
		`{"a":"\\","b":{}}`:                   2,
		`{"a":"\\\"[","b":[]}`:                2,
		`["unterminated {`:                    2,
		`[0,0,0]`:                             4,
		`[ null , "]" , true,[],{"a":[1]}]`:   8,
		`{"a":1,"b":"x","c":{"d":2}}`:         2,
		`{"k":[{"type":"text","text":"hi"}]}`: 3,
	} {
		if got := DecodedValues([]byte(in)); got != want {
			t.Errorf("DecodedValues(%s) = %d, want %d", in, got, want)
		}
	}
	// Against a decoder's count on generated JSON with escapes in strings.
	var v any
	doc := `{"messages":[` + strings.Repeat(`{"role":"user","content":[{"type":"text","text":"a \"[quoted]\" {x} \\"}],"n":[1, "x]",null,[2,true]]},`, 50) + `{}]}`
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	if got, want := DecodedValues([]byte(doc)), countDecoded(v); got != want {
		t.Errorf("DecodedValues of the generated document = %d, a decoder made %d", got, want)
	}
}

func countDecoded(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 1
		for _, e := range x {
			n += countDecoded(e)
		}
		return n
	case []any:
		n := 1
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
			default:
				n++ // a scalar element of an array
			}
			n += countDecoded(e)
		}
		return n
	}
	return 0
}

func BenchmarkDecodedValues(b *testing.B) {
	doc := []byte(`{"model":"m","messages":[` + strings.Repeat(`{"role":"user","content":[{"type":"text","text":"`+strings.Repeat("some words of a conversation, ", 20)+`"}]},`, 2000) + `{}],"stop":["a","b"]}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		DecodedValues(doc)
	}
}
