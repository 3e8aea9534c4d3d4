package evaljob_test

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/evaljob"
)

// binom is C(n,k) exactly.
func binom(n, k int) *big.Float {
	return new(big.Float).SetInt(new(big.Int).Binomial(int64(n), int64(k)))
}

func TestPassAtKIsTheUnbiasedEstimator(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{2, 1, 1, 0.5}, {2, 1, 2, 1}, {2, 0, 2, 0}, {2, 2, 1, 1}, {5, 2, 2, 0.7}, {10, 3, 1, 0.3},
	} {
		if got := evaljob.PassAtK(c.n, c.c, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PassAtK(%d, %d, %d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
	// Against 1 - C(n-c,k)/C(n,k) computed exactly, over a grid.
	for n := 1; n <= 30; n++ {
		for cc := 0; cc <= n; cc++ {
			for k := 1; k <= n; k++ {
				want := 1.0
				if n-cc >= k {
					q, _ := new(big.Float).Quo(binom(n-cc, k), binom(n, k)).Float64()
					want = 1 - q
				}
				if got := evaljob.PassAtK(n, cc, k); math.Abs(got-want) > 1e-9 {
					t.Fatalf("PassAtK(%d, %d, %d) = %v, want %v", n, cc, k, got, want)
				}
			}
		}
	}
}

func TestSummarizeCountsOnlyRewardedTrialsInPassAtK(t *testing.T) {
	one, zero := 1.0, 0.0
	spec := &evaljob.Spec{TaskIDs: []string{"a", "b"}, Agents: []evaljob.Agent{{Name: "x"}}, Attempts: 3}
	s := evaljob.Summarize(spec, []*evaljob.Result{
		{Agent: "x", Task: "a", Reward: &one}, {Agent: "x", Task: "a", Reward: &zero}, {Agent: "x", Task: "a", Reward: &zero},
		{Agent: "x", Task: "b", Reward: &one}, {Agent: "x", Task: "b", ErrorType: evaljob.ErrReset},
	})
	if s.Trials != 6 || s.Finished != 5 || s.Unrewarded != 1 {
		t.Fatalf("counts: %+v", s)
	}
	a, b := s.Rows[0], s.Rows[1]
	if got := a.PassAtK; math.Abs(got["1"]-1.0/3) > 1e-12 || math.Abs(got["2"]-2.0/3) > 1e-12 || got["3"] != 1 {
		t.Errorf("task a pass@k = %v", got)
	}
	if _, has := b.PassAtK["2"]; has || b.PassAtK["1"] != 1 || b.ErrorTypes[evaljob.ErrReset] != 1 || b.Rewarded != 1 {
		t.Errorf("task b: %+v (pass@2 needs 2 rewarded trials)", b)
	}
	if got := s.Agents[0].PassAtK; math.Abs(got["1"]-(1.0/3+1)/2) > 1e-12 || math.Abs(got["2"]-2.0/3) > 1e-12 {
		t.Errorf("agent pass@k = %v (the mean over the tasks having k)", got)
	}
	if m := *s.Agents[0].MeanReward; m != 0.5 {
		t.Errorf("agent mean = %v, want 0.5 (2 of 4 rewarded trials)", m)
	}
}

func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	line := evaljob.ProgressLine(evaljob.Progress{Total: 10, Done: 5, Running: 2, Unrewarded: 1, RewardSum: 2, Started: start}, start.Add(90*time.Second), 100)
	for _, want := range []string{"[###############...............]", "5/10", "running 2", "unrewarded 1", "mean 0.5", "1m30s"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
	if l := evaljob.ProgressLine(evaljob.Progress{Total: 10, Started: start}, start, 30); len(l) > 30 {
		t.Errorf("%q is wider than 30 columns", l)
	}
}
