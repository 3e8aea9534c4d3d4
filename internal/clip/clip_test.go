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
