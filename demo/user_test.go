package main

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// TestUserDoneSaysWhatEndedTheEpisode: a failed check of the customer's
// episode shows its end, turn and reward, and the failure on a line of
// its own, never the metadata struct (pointers included); a satisfied
// customer's episode passes.
func TestUserDoneSaysWhatEndedTheEpisode(t *testing.T) {
	obs := &wire.Observation{Done: true}
	obs.Metadata.TurnNumber = 1
	obs.Metadata.ErrorType = wire.FailureUser
	obs.Metadata.Error = "simulated user: program not found"
	err := userDone(obs, 3)
	if err == nil {
		t.Fatal("a failed episode passed the check")
	}
	msg := err.Error()
	for _, want := range []string{"done=true user_done=false turn 1 reward none", "\n  error_type user_failed: simulated user: program not found"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "0x") || strings.Contains(msg, "{") {
		t.Errorf("message %q shows a struct", msg)
	}
	one := 1.0
	ok := &wire.Observation{Done: true, Reward: &one}
	ok.Metadata.TurnNumber, ok.Metadata.UserDone = 3, true
	if err := userDone(ok, 3); err != nil {
		t.Errorf("a satisfied customer's episode: %v", err)
	}
}
