package evaljob_test

import (
	"encoding/json"
	"testing"

	"github.com/harnessd/harnessd/evaljob"
)

// TestSummaryOfFiniteRewardsEncodes (red team 6): each trial's reward is
// finite (tasks refuses inf and nan), but the summary's mean sums them
// first: two trials at 1e308 make mean_reward +Inf, and summary.json
// cannot be written (json: unsupported value), which fails the whole job
// at its end. The control: rewards 1 and 0 summarise and encode.
func TestSummaryOfFiniteRewardsEncodes(t *testing.T) {
	spec := &evaljob.Spec{TaskIDs: []string{"t"}, Agents: []evaljob.Agent{{Name: "a"}}, Attempts: 2}
	results := func(x, y float64) []*evaljob.Result {
		return []*evaljob.Result{
			{Trial: "a__t__1", Agent: "a", Task: "t", Attempt: 1, Reward: &x},
			{Trial: "a__t__2", Agent: "a", Task: "t", Attempt: 2, Reward: &y},
		}
	}
	if _, err := json.Marshal(evaljob.Summarize(spec, results(1, 0))); err != nil {
		t.Fatalf("control: %v", err)
	}
	s := evaljob.Summarize(spec, results(1e308, 1e308))
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("the summary of two finite rewards (1e308 each) cannot be written: %v", err)
	}
}
