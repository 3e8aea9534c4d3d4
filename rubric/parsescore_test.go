package rubric

import (
	"strings"
	"testing"
)

// parseScore reads a bare number or the numeric "score" or "reward" of a
// JSON object, decoding only those two keys (the rest of the output may be
// large: a tool's result echoing what the harness wrote).
func TestParseScore(t *testing.T) {
	for in, want := range map[string]float64{
		"0.5": 0.5, " 1 ": 1, `{"score":0.25}`: 0.25, `{"reward":-1,"x":[1,2]}`: -1,
		`{"score":"0.5","reward":0.75}`: 0.75, `{"score":1e3}`: 1000,
	} {
		if got, ok := parseScore(in); !ok || got != want {
			t.Errorf("parseScore(%s) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "yes", `{"score":null}`, `{"score":true}`, `{"score":"1"}`, `[0.5]`, `{"other":1}`} {
		if got, ok := parseScore(in); ok {
			t.Errorf("parseScore(%s) = %v, want no score", in, got)
		}
	}
	big := `{"score":0.5,"echo":[` + strings.Repeat("0,", 1<<20) + `0]}`
	if got, ok := parseScore(big); !ok || got != 0.5 {
		t.Errorf("parseScore of 2 MiB with a score: %v %v", got, ok)
	}
}
