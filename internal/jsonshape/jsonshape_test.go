package jsonshape

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func nested(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

// Check refuses what a Python decoder cannot take and passes the rest;
// brackets and digits inside strings do not count.
func TestCheck(t *testing.T) {
	for in, want := range map[string]string{
		nested(MaxDepth):                                     "",
		nested(MaxDepth + 1):                                 "nested deeper than 128",
		strings.Repeat("[", 5000):                            "nested deeper than 128",
		`"` + strings.Repeat("[", 5000) + `"`:                "",
		`{"s":"\"[[[[` + strings.Repeat("{", 300) + `"}`:     "",
		"0." + strings.Repeat("0", MaxNumberLen-3) + "1":     "",
		"0." + strings.Repeat("0", MaxNumberLen-2) + "1":     "number literal longer than 1000",
		strings.Repeat("9", MaxNumberLen):                    "beyond float64's range",
		strings.Repeat("9", MaxNumberLen+1):                  "number literal longer than 1000",
		`[1e` + strings.Repeat("0", 2000) + `]`:              "number literal longer",
		`{"n":"` + strings.Repeat("9", 5000) + `"}`:          "",
		`[true, false, null, -1.5e+10]`:                      "",
		`{"n":1e400}`:                                        "beyond float64's range (1e400)",
		`[-1.7e309]`:                                         "beyond float64's range",
		`1E309`:                                              "beyond float64's range",
		`[1` + strings.Repeat("0", 309) + `]`:                "beyond float64's range",
		`[1` + strings.Repeat("0", 307) + `, 1e308, 1e-400]`: "",
		`{"true":true,"e":false}`:                            "",
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

// BenchmarkCheckTokenIDs: a line of 10,000 token ids, the number-densest
// JSON a harness reports (each literal ends with a range look).
func BenchmarkCheckTokenIDs(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"token_ids":[`)
	for i := range 10000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(100000 + i*7))
	}
	sb.WriteString(`]}`)
	line := []byte(sb.String())
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if err := Check(line); err != nil {
			b.Fatal(err)
		}
	}
}
