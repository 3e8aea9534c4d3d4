package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestContainers(t *testing.T) {
	for in, want := range map[string]int{
		``:                                    0,
		`"x"`:                                 0,
		`{}`:                                  1,
		`[{},{},[]]`:                          4,
		`{"a":"{[","b":[1,2]}`:                2,
		`{"a":"q\"{[","b":{}}`:                2,
		`{"a":"\\","b":{}}`:                   2,
		`{"a":"\\\"[","b":[]}`:                2,
		`["unterminated {`:                    1,
		`{"k":[{"type":"text","text":"hi"}]}`: 3,
	} {
		if got := Containers([]byte(in)); got != want {
			t.Errorf("Containers(%s) = %d, want %d", in, got, want)
		}
	}
	// Against a decoder's count on generated JSON with escapes in strings.
	var v any
	doc := `{"messages":[` + strings.Repeat(`{"role":"user","content":[{"type":"text","text":"a \"[quoted]\" {x} \\"}]},`, 50) + `{}]}`
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	if got, want := Containers([]byte(doc)), countDecoded(v); got != want {
		t.Errorf("Containers of the generated document = %d, a decoder made %d", got, want)
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
			n += countDecoded(e)
		}
		return n
	}
	return 0
}
