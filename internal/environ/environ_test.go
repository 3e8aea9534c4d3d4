package environ

import "testing"

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
