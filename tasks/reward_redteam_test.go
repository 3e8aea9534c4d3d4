package tasks

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestRewardIsAlwaysFinite (red team 6): readReward refuses a reward.txt
// of inf, nan or 1e309, but reward.json's mean of its numbers, each finite,
// can overflow: {"a": 1e308, "b": 1e308} gives a reward of +Inf, which
// encoding/json cannot write (the trial's result.json, the observation).
// The control: reward.txt 1e309 is refused with an error.
func TestRewardIsAlwaysFinite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "reward.txt"), []byte("1e309\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ctl Result
	readReward(dir, &ctl)
	if ctl.Reward != nil || ctl.Error == "" {
		t.Fatalf("control: reward.txt 1e309 gave reward %v, error %q", ctl.Reward, ctl.Error)
	}

	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "reward.json"), []byte(`{"a": 1e308, "b": 1e308}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var res Result
	readReward(dir, &res)
	if res.Reward != nil && (math.IsInf(*res.Reward, 0) || math.IsNaN(*res.Reward)) {
		_, err := json.Marshal(res.Reward)
		t.Fatalf("reward.json of two finite numbers gave reward %v (json: %v)", *res.Reward, err)
	}
}
