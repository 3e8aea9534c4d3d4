package jsonshape

import (
	"encoding/json"
	"strings"
	"testing"
)

func nested(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

// Check refuses what a Python decoder cannot take and passes the rest;
// brackets and digits inside strings do not count.
func TestCheck(t *testing.T) {
	for in, want := range map[string]string{
		nested(MaxDepth):                                 "",
		nested(MaxDepth + 1):                             "nested deeper than 128",
		strings.Repeat("[", 5000):                        "nested deeper than 128",
		`"` + strings.Repeat("[", 5000) + `"`:            "",
		`{"s":"\"[[[[` + strings.Repeat("{", 300) + `"}`: "",
		strings.Repeat("9", MaxNumberLen):                "",
		strings.Repeat("9", MaxNumberLen+1):              "number literal longer than 1000",
		`[1e` + strings.Repeat("0", 2000) + `]`:          "number literal longer",
		`{"n":"` + strings.Repeat("9", 5000) + `"}`:      "",
		`[true, false, null, -1.5e+10]`:                  "",
	} {
		err := Check([]byte(in))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Check(%.40q…) = %v, want %q", in, err, want)
		}
	}
}

// ReplaceLoneSurrogates writes each lone surrogate escape \ufffd, keeps a
// pair and every other escape, and returns text without one unchanged.
func TestReplaceLoneSurrogates(t *testing.T) {
	for in, want := range map[string]string{
		`{"s":"a\ud800b"}`:            `{"s":"a\ufffdb"}`,
		`{"s":"q\udc80","k\uD801":1}`: `{"s":"q\ufffd","k\ufffd":1}`,
		`["\ud83d\ude00"]`:            `["\ud83d\ude00"]`,
		`["\ud83d\ud83d\ude00"]`:      `["\ufffd\ud83d\ude00"]`,
		`["\\ud800", "\"\u0041"]`:     `["\\ud800", "\"\u0041"]`,
		`["\ud800`:                    `["\ufffd`,
		`{"plain":"text"}`:            `{"plain":"text"}`,
	} {
		got := string(ReplaceLoneSurrogates([]byte(in)))
		if got != want {
			t.Errorf("ReplaceLoneSurrogates(%s) = %s, want %s", in, got, want)
		}
		if HasLoneSurrogate([]byte(in)) != (got != in) {
			t.Errorf("HasLoneSurrogate(%s) = %v", in, !(got != in))
		}
		var v any
		if json.Valid([]byte(want)) && json.Unmarshal([]byte(got), &v) != nil {
			t.Errorf("%s no longer decodes", got)
		}
	}
}

// A value without lone surrogates is not copied.
func TestReplaceLoneSurrogatesDoesNotCopyCleanText(t *testing.T) {
	b := []byte(`{"a":"\u00e9\ud83d\ude00","b":[1,2]}`)
	if n := testing.AllocsPerRun(100, func() { _ = ReplaceLoneSurrogates(b) }); n != 0 {
		t.Errorf("allocated %v times", n)
	}
}
