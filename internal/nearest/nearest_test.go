package nearest

import "testing"

// A misspelling (a letter missing, extra, changed, or two swapped) finds
// its key, case aside; a name far from every key finds none.
func TestKey(t *testing.T) {
	keys := []string{"command", "adapter", "agent", "env", "max_line_bytes"}
	for k, want := range map[string]string{
		"comand": "command", "Command": "command", "agnet": "agent", "evn": "env",
		"max_line_byte": "max_line_bytes", "xyz": "", "commander_x": "", "": "",
	} {
		if got := Key(k, keys); got != want {
			t.Errorf("Key(%q) = %q, want %q", k, got, want)
		}
	}
}
