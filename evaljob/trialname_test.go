package evaljob

import (
	"strings"
	"testing"
)

// Trial names are distinct for distinct (agent, task) pairs even where a
// name holds the separator "__" or an underscore at its edge, fit a file
// name, and are unchanged for ordinary names (a job of an earlier version
// resumes into the same directories).
func TestTrialNamesAreDistinctAndFit(t *testing.T) {
	if got := trialName("claude-code", "hello_world", 2); got != "claude-code__hello_world__2" {
		t.Errorf("an ordinary name changed: %q", got)
	}
	long := strings.Repeat("x", 300)
	pairs := [][2]string{
		{"a", "b__c"}, {"a__b", "c"},
		{"a_", "b"}, {"a", "_b"},
		{"a", "b"}, {"a%5Fb", "c"},
		{long, long}, {long + "y", long},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		n := trialName(p[0], p[1], 1)
		if q, dup := seen[n]; dup {
			t.Errorf("%q and %q share the trial directory %q", p, q, n)
		}
		seen[n] = p
		if len(n) > 255 || strings.Count(n, "__") != 2 {
			t.Errorf("%q: trial name %q (%d bytes, %d separators)", p, n, len(n), strings.Count(n, "__"))
		}
	}
}
