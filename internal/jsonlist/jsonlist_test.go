package jsonlist

import (
	"fmt"
	"strings"
	"testing"
)

func TestMayNameAndNoField(t *testing.T) {
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"type", true}, {"TYPE", true}, {"Tool_Use_ID", true}, {"tooluseid", true}, {"tool-use-id", true},
		{"typ", false}, {"types", false}, {"", false}, {"\u212aey", true}, {strings.Repeat("a", 40), false},
	} {
		if got := MayName([]byte(c.key), "type", "tool_use_id"); got != c.want {
			t.Errorf("MayName(%q) = %v, want %v", c.key, got, c.want)
		}
	}
	for _, c := range []struct {
		e    string
		want bool
	}{
		{`{}`, true}, {`{"a":1,"b":{"type":2}}`, true}, {`{"a":1,"Type":2}`, false}, {`{"t\u0079pe":1}`, false}, {`[]`, false}, {`0`, false},
	} {
		if got := NoField([]byte(c.e), "type"); got != c.want {
			t.Errorf("NoField(%s) = %v, want %v", c.e, got, c.want)
		}
	}
}

func TestRead(t *testing.T) {
	type T struct {
		A string `json:"a"`
		i int
	}
	at := func(v *T) *int { return &v.i }
	for _, c := range []struct{ in, want string }{
		{`[{},{"a":"x"},null,{"b":1},{"A":"y"}]`, `[{x 1} {y 4}] <nil>`},
		{`[]`, `[] <nil>`},
		{`null`, `[] <nil>`},
		{`[{"a":1}]`, `[] json: cannot unmarshal number into Go struct field T.a of type string`},
		{`{}`, `[] json: cannot unmarshal object into Go value of type []jsonlist.T`},
	} {
		got, err := Read(nil, []byte(c.in), []string{"a"}, at)
		if s := fmt.Sprint(got, " ", err); s != c.want {
			t.Errorf("Read(%s) = %s, want %s", c.in, s, c.want)
		}
	}
	if Count([]byte(`[1,[2,3],{}]`)) != 3 || Count([]byte(`{}`)) != -1 || Count([]byte(`[]`)) != 0 {
		t.Errorf("Count")
	}
}
