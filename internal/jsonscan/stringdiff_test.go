package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzStringValue checks StringValue against json.Unmarshal into a string
// of any bytes that stand for a JSON string (white space about it allowed):
// the same string, taken or refused alike; anything else (null too) is
// refused.
func FuzzStringValue(f *testing.F) {
	for _, s := range []string{`"a"`, ` "a" `, `""`, `"\u00e9\ud83d\ude00"`, `"a\"b"`, `"a\\"`, `"\ud800"`,
		"\"\xff\"", "\"a\x00\"", `"a" "b"`, `"abc\"`, `null`, `1`, `"`, `"\u0000"`, "\t\"\xc3\xa9\"\n",
		"\"\"\v", "\f\"a\"", "\"a\"\xc2\xa0", "\xc2\x85\"a\""} { // JSON white space only
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := StringValue(raw)
		var want string
		wok := false
		if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '"' {
			wok = json.Unmarshal(raw, &want) == nil
		}
		if ok != wok || got != want {
			t.Fatalf("StringValue(%q) = %q, %v; json.Unmarshal: %q, %v", raw, got, ok, want, wok)
		}
	})
}
