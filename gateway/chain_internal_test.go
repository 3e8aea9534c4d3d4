package gateway

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// quadraticParents is the parent choice the prefix index must reproduce,
// as the export computed it before: per call (index order), the earlier
// call whose prompt+completion is the longest exact prefix of its prompt,
// the latest among equally long ones; -1 for none.
func quadraticParents(calls []*call) []int {
	out := make([]int, len(calls))
	for i, c := range calls {
		out[i] = -1
		for j := 0; j < i; j++ {
			if !isPrefix(calls[j], c.promptIDs) {
				continue
			}
			if b := out[i]; b < 0 || calls[j].seqLen() >= calls[b].seqLen() {
				out[i] = j
			}
		}
	}
	return out
}

// randomEpisode makes calls that extend, regenerate, compact and repeat
// one another, with token runs around the block size, and some that offer
// no tools.
func randomEpisode(r *rand.Rand, n int) []*call {
	var calls []*call
	piece := func() []int {
		out := make([]int, r.IntN(2*blockSize+3))
		for i := range out {
			out[i] = r.IntN(3) // a tiny vocabulary: many near-misses
		}
		return out
	}
	for i := range n {
		var prompt []int
		switch k := r.IntN(10); {
		case k < 6 && len(calls) > 0: // extend (or regenerate) an earlier call
			p := calls[r.IntN(len(calls))]
			prompt = append(append(slices.Clone(p.promptIDs), p.completionIDs...), piece()...)
		case k < 8 && len(calls) > 0: // repeat an earlier prompt
			prompt = slices.Clone(calls[r.IntN(len(calls))].promptIDs)
		default: // a fresh start
			prompt = piece()
		}
		if len(prompt) == 0 {
			prompt = []int{1}
		}
		comp := piece()
		if len(comp) == 0 || r.IntN(5) == 0 {
			comp = []int{r.IntN(3)} // short completions collide more
		}
		calls = append(calls, &call{index: i + 1, turn: i/3 + 1, traffic: TrafficTraining,
			offersTools: r.IntN(4) != 0, promptIDs: prompt, completionIDs: comp, logprobs: make([]float64, len(comp))})
	}
	return calls
}

// TestPrefixIndexParents: parents assigned on record, in any record order,
// are the quadratic choice, and the issues a turn reports are the export's
// (but the episode-wide single_call).
func TestPrefixIndexParents(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		calls := randomEpisode(r, 1+r.IntN(40))
		order := slices.Clone(calls)
		if trial%2 == 1 { // concurrent calls end out of index order
			for i := range order {
				if j := i + r.IntN(3); j < len(order) {
					order[i], order[j] = order[j], order[i]
				}
			}
		}
		g := &Gateway{opts: Options{Upstream: Upstream{Kind: UpstreamEngine}}}
		for _, c := range order {
			g.record(c)
		}
		want := quadraticParents(calls)
		got := parentPositions(g.chains.cands)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: parents %v, want %v", trial, got, want)
		}
		ex, err := g.Export()
		if err != nil {
			t.Fatal(err)
		}
		for turn := 1; turn <= calls[len(calls)-1].turn; turn++ {
			issues, err := g.TurnIssues(turn)
			if err != nil {
				t.Fatal(err)
			}
			var fromExport []Issue
			for _, is := range ex.Issues {
				if is.CallIndex != 0 && calls[is.CallIndex-1].turn == turn && is.Code != IssueSingleCall {
					fromExport = append(fromExport, is)
				}
			}
			if !slices.Equal(issues, fromExport) {
				t.Fatalf("trial %d turn %d: issues %+v, the export's %+v", trial, turn, issues, fromExport)
			}
		}
	}
}

// TestPrefixIndexCatchesMismatch: the index's positive control — a
// quadratic choice that differs (a parent one token short of a prefix)
// is seen as different.
func TestPrefixIndexCatchesMismatch(t *testing.T) {
	a := &call{index: 1, traffic: TrafficTraining, promptIDs: []int{1, 2}, completionIDs: []int{3}, logprobs: []float64{0}}
	b := &call{index: 2, traffic: TrafficTraining, promptIDs: []int{1, 2, 4, 5}, completionIDs: []int{6}, logprobs: []float64{0}}
	c := &call{index: 3, traffic: TrafficTraining, promptIDs: []int{1, 2, 3, 5}, completionIDs: []int{6}, logprobs: []float64{0}}
	g := &Gateway{}
	for _, x := range []*call{a, b, c} {
		g.record(x)
	}
	if got := parentPositions(g.chains.cands); !slices.Equal(got, []int{-1, -1, 0}) {
		t.Fatalf("parents %v, want [-1 -1 0]", got)
	}
	if got := quadraticParents([]*call{a, b, c}); !slices.Equal(got, []int{-1, -1, 0}) {
		t.Fatalf("quadratic parents %v, want [-1 -1 0]", got)
	}
}
