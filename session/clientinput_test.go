package session

import (
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	cases := []struct {
		s         string
		max       int
		multiline bool
		ok        bool
	}{
		{"plain", 10, false, true},
		{"", 10, false, true},
		{"a\x00", 0, true, false},
		{"a\nb\tc\r", 0, true, true},
		{"a\nb", 0, false, false},
		{"\x7f", 0, true, false},
		{"\u009b", 0, true, false},
		{"\xff", 0, true, false},
		{"\uFFFD is a real character", 0, false, true},
		{strings.Repeat("✓", 5), 5, false, true},
		{strings.Repeat("✓", 6), 5, false, false},
	}
	for _, c := range cases {
		if err := CheckText(c.s, c.max, c.multiline); (err == nil) != c.ok {
			t.Errorf("CheckText(%q, %d, %v) = %v, want ok=%v", c.s, c.max, c.multiline, err, c.ok)
		}
	}
	if err := CheckEpisodeID("ep\x00"); err == nil || !strings.Contains(err.Error(), "episode_id") || !strings.Contains(err.Error(), "U+0000") {
		t.Errorf("CheckEpisodeID with a NUL: %v", err)
	}
}
