package jsonscan

import "testing"

func TestStringValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`"plain"`, "plain", true},
		{`  "spaced" `, "spaced", true},
		{`"a\"b"`, `a"b`, true},
		{`"\u00e9t\u00e9"`, "été", true},
		{`""`, "", true},
		{"\"tab\there\"", "", false}, // a raw control byte is not JSON
		{`"a"b"`, "", false},
		{`"unterminated`, "", false},
		{`"\x"`, "", false},
		{`12`, "", false},
		{`null`, "", false},
		{`{"a":"b"}`, "", false},
		{``, "", false},
		{`"`, "", false},
	} {
		got, ok := StringValue([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("StringValue(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func BenchmarkStringValuePlain(b *testing.B) {
	raw := []byte(`"a plain role or id, no escapes"`)
	b.ReportAllocs()
	for b.Loop() {
		StringValue(raw)
	}
}
