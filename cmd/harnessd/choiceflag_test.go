package main

import "testing"

// A choice flag takes its words in any letter case and with spaces, and an
// empty value as its default, as --drain-policy (ParseDrainPolicy
// lowercased and trimmed) and --isolation ("" was auto) did before they
// were checked at parse time; any other word is refused.
func TestChoiceFlagIsAsLenientAsBefore(t *testing.T) {
	for in, want := range map[string]string{" Cancel": "cancel", "PROCESS ": "process", "": "auto"} {
		v := "auto"
		if err := (choiceFlag{&v, []string{"auto", "cancel", "process"}}).Set(in); err != nil || v != want {
			t.Errorf("Set(%q): %q, %v; want %q", in, v, err, want)
		}
	}
	v := "auto"
	if err := (choiceFlag{&v, []string{"auto", "process"}}).Set("vm"); err == nil || v != "auto" {
		t.Errorf("Set(vm): %q, %v; want an error and the value kept", v, err)
	}
}
