package simuser

import (
	"strconv"
	"strings"
	"testing"
)

// An answer line is a non-empty message or done; anything else is an
// error that quotes what the program wrote.
func TestDecodeAnswer(t *testing.T) {
	for _, tc := range []struct {
		line, message string
		done          bool
		err           string
	}{
		{line: `{"message": "hi"}`, message: "hi"},
		{line: `{"done": true, "reason": "ok"}`, done: true},
		{line: `{"message": ""}`, err: "neither"},
		{line: `{}`, err: "neither"},
		{line: `hello`, err: `not {"message"`},
	} {
		ans, err := DecodeAnswer([]byte(tc.line))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), strconv.Quote(tc.line)) {
				t.Errorf("%s: err %v, want one with %q quoting the line", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if ans.Done != tc.done || (!tc.done && *ans.Message != tc.message) {
			t.Errorf("%s: %+v", tc.line, ans)
		}
	}
}
