package session

import (
	"testing"
	"time"
)

func TestFormatSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{600 * time.Second: "600.0", 50 * time.Millisecond: "0.05", 1500 * time.Millisecond: "1.5"} {
		if got := formatSeconds(d); got != want {
			t.Errorf("%v -> %q, want %q", d, got, want)
		}
	}
}
