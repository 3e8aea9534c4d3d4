package environ

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	env := []string{"A=1", "B=", "A=2", "NOEQUALS", "C=x=y"}
	for _, c := range []struct {
		name, val string
		ok        bool
	}{
		{"A", "2", true}, {"B", "", true}, {"C", "x=y", true}, {"NOEQUALS", "", false}, {"D", "", false},
	} {
		if v, ok := Lookup(env, c.name); v != c.val || ok != c.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.name, v, ok, c.val, c.ok)
		}
	}
}

func TestSet(t *testing.T) {
	env := Set([]string{"A=1", "B=2"}, "A=3")
	env = Set(env, "C=4")
	if got := strings.Join(env, " "); got != "A=3 B=2 C=4" {
		t.Fatalf("Set: %q, want A replaced in place and C appended", got)
	}
}
