package clip

import (
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	if got := Bytes([]byte("short")); got != "short" {
		t.Errorf("short: %q", got)
	}
	exact := strings.Repeat("x", Limit)
	if got := Bytes([]byte(exact)); got != exact {
		t.Errorf("exactly the limit was cut: %d bytes", len(got))
	}
	long := strings.Repeat("y", Limit+1)
	if got := Bytes([]byte(long)); got != long[:Limit]+"…" {
		t.Errorf("long: %q", got)
	}
}

func TestString(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("x", Limit), strings.Repeat("y", Limit+1)} {
		if got, want := String(s), Bytes([]byte(s)); got != want {
			t.Errorf("String(%d bytes) = %q, Bytes gives %q", len(s), got, want)
		}
	}
}
