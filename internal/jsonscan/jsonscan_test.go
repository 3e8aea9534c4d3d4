package jsonscan

import (
	"strings"
	"testing"
)

func TestValue(t *testing.T) {
	for _, c := range []struct {
		in       string
		maxDepth int
		want     int // the index past the value, -1 for none
	}{
		{`"a\"b",`, 0, 6},
		{`"unterminated`, 0, -1},
		{`{"a":[1,{"b":"]}"}]} x`, 0, 20},
		{`[[[1]]]`, 2, -1},
		{`[[[1]]]`, 3, 7},
		{`[1,2`, 0, -1},
		{`123,`, 0, 3},
		{`true}`, 0, 4},
		{`,`, 0, -1},
		{``, 0, -1},
	} {
		if got := Value([]byte(c.in), 0, c.maxDepth); got != c.want {
			t.Errorf("Value(%q, depth %d) = %d, want %d", c.in, c.maxDepth, got, c.want)
		}
	}
}

func TestRestAndSpace(t *testing.T) {
	b := []byte(`, {"x": "]"}, 3] tail`)
	if got := Rest(b, 0, 0); got != 16 {
		t.Errorf("Rest = %d, want 16", got)
	}
	if got := Rest([]byte(`, [1`), 0, 0); got != -1 {
		t.Errorf("Rest of an unterminated list = %d", got)
	}
	if got := Space([]byte(" \t\r\nx"), 0); got != 4 {
		t.Errorf("Space = %d", got)
	}
	if got := Space([]byte("  "), 0); got != 2 {
		t.Errorf("Space at the end = %d", got)
	}
}

func TestElements(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{` [ 1 , "a,]" ,{"b":[1,2]}, null ] `, []string{`1`, `"a,]"`, `{"b":[1,2]}`, `null`}, true},
		{`[]`, nil, true},
		{`{}`, nil, false},
		{`[1,2`, []string{`1`, `2`}, false},
	} {
		var got []string
		ok := Elements([]byte(c.in), func(e []byte) bool { got = append(got, string(e)); return true })
		if ok != c.ok || strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Elements(%s): %q %v, want %q %v", c.in, got, ok, c.want, c.ok)
		}
	}
	n := 0
	if Elements([]byte(`[1,2,3]`), func([]byte) bool { n++; return n < 2 }) || n != 2 {
		t.Errorf("Elements did not stop when f returned false: %d", n)
	}
}
