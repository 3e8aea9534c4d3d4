package session

import (
	"math"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// TestTaskRewardAddedToTheRubricsIsFinite: a task's reward (finite, up to
// 1.7e308 from reward.txt) is added to the rubrics' (finite, up to
// MaxFloat64): the sum was +Inf, which no observation can carry as JSON;
// now it is clamped to ±MaxFloat64. The control: 1 + 0.5 is 1.5.
func TestTaskRewardAddedToTheRubricsIsFinite(t *testing.T) {
	add := func(rubrics, task float64) float64 {
		obs := &wire.Observation{Reward: &rubrics}
		addTaskGrade(obs, "t", &wire.TaskGrade{Reward: &task})
		return *obs.Reward
	}
	if got := add(0.5, 1); got != 1.5 {
		t.Fatalf("control: 0.5 + 1 = %v", got)
	}
	for _, c := range [][3]float64{{1.7e308, 1.7e308, math.MaxFloat64}, {-1.7e308, -1.7e308, -math.MaxFloat64}} {
		if got := add(c[0], c[1]); got != c[2] {
			t.Errorf("%v + %v gave %v, want %v", c[0], c[1], got, c[2])
		}
	}
}
