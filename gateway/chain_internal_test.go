package gateway

import (
	"math/rand/v2"
	"slices"
	"strconv"
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
		case k < 6 && len(calls) > 0: // extend (or regenerate) an earlier call, often the last
			p := calls[len(calls)-1]
			if k < 3 {
				p = calls[r.IntN(len(calls))]
			}
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

// TestPrefixIndexParentsSharedArrays is TestPrefixIndexParents with the
// prompts read as the gateway reads them (idsMemo): a prompt that extends
// the one before shares its array, and the index compares only what is
// not the same memory.
func TestPrefixIndexParentsSharedArrays(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	aliased := 0
	for trial := range 300 {
		calls := randomEpisode(r, 1+r.IntN(40))
		var memo idsMemo
		for i, c := range calls {
			ids, _, err := memo.parse(idsList(c.promptIDs), nil)
			if err != nil || !slices.Equal(ids, c.promptIDs) {
				t.Fatalf("trial %d: the memo read %v (%v), want %v", trial, ids, err, c.promptIDs)
			}
			c.promptIDs = ids
			if i > 0 && &ids[0] == &calls[i-1].promptIDs[0] {
				aliased++
			}
		}
		g := &Gateway{opts: Options{Upstream: Upstream{Kind: UpstreamEngine}}}
		for _, c := range calls {
			g.record(c)
		}
		if got, want := parentPositions(g.chains.cands), quadraticParents(calls); !slices.Equal(got, want) {
			t.Fatalf("trial %d: parents %v, want %v", trial, got, want)
		}
	}
	if aliased < 100 {
		t.Fatalf("only %d prompts shared the array before theirs: the test does not exercise sharing", aliased)
	}
}

// idsList writes ids as an engine's JSON list.
func idsList(ids []int) []byte {
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}

// seq returns n distinct ids from first on.
func seq(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// parentsOf records calls (prompt, completion pairs) into a fresh gateway
// in order and returns their parents' positions.
func parentsOf(pairs ...[2][]int) []int {
	g := &Gateway{}
	for i, pc := range pairs {
		g.record(&call{index: i + 1, traffic: TrafficTraining, promptIDs: pc[0], completionIDs: pc[1], logprobs: make([]float64, len(pc[1]))})
	}
	return parentPositions(g.chains.cands)
}

// TestPrefixIndexNoShortcut: a prompt is linked to a call only when that
// call's prompt+completion is truly its prefix, whatever else they have
// in common: the same length and the same last blocks with one early id
// changed; the same array at another offset; the same array at the same
// start but other ids where the completion would be; the same hash.
func TestPrefixIndexNoShortcut(t *testing.T) {
	p, comp, more := seq(100, 3*blockSize), seq(1000, 5), seq(2000, blockSize+3)
	changed := slices.Clone(p)
	changed[2] = 7
	cases := map[string][][2][]int{
		"an early id changed": {{p, comp}, {slices.Concat(changed, comp, more), comp}},
	}
	// One array, the second prompt starting one id later: its ids where the
	// first call's completion would be are that completion.
	arr := slices.Concat(p, []int{7}, comp, more)
	cases["the same array at another offset"] = [][2][]int{{arr[:len(p)], comp}, {arr[1:], comp}}
	// One array from the same start, the two ids after the first prompt not
	// its completion's (the rest are, up to the next block).
	p2 := seq(100, 3*blockSize-2)
	arr2 := slices.Concat(p2, []int{7, 8}, comp[2:], more)
	cases["the same array, not the completion"] = [][2][]int{{arr2[:len(p2):len(p2)], comp}, {arr2, comp}}
	// A first call of one block, filed under its hash; a prompt whose first
	// block hashes the same, its last two ids otherwise (h·P² + (a+1)·P + b+1
	// is unchanged by a+1, b−P).
	const prime = 1099511628211
	a := append(seq(1, blockSize-1), prime+5)
	b := slices.Clone(a)
	b[blockSize-2], b[blockSize-1] = b[blockSize-2]+1, 5
	if hashOf(a) != hashOf(b) {
		t.Fatal("the colliding block does not collide")
	}
	cases["the same hash"] = [][2][]int{{a[:blockSize-1], a[blockSize-1:]}, {seq(5000, 3), comp}, {slices.Concat(b, more), comp}}
	for name, pairs := range cases {
		want := make([]int, len(pairs))
		for i := range want {
			want[i] = -1
		}
		if got := parentsOf(pairs...); !slices.Equal(got, want) {
			t.Errorf("%s: parents %v, want %v", name, got, want)
		}
	}
	// The positive control: the same calls, truly extending.
	if got := parentsOf([2][]int{p, comp}, [2][]int{slices.Concat(p, comp, more), comp}); !slices.Equal(got, []int{-1, 0}) {
		t.Errorf("a true continuation: parents %v, want [-1 0]", got)
	}
	arr3 := slices.Concat(p, comp, more)
	if got := parentsOf([2][]int{arr3[:len(p):len(p)], comp}, [2][]int{arr3, comp}); !slices.Equal(got, []int{-1, 0}) {
		t.Errorf("a true continuation in one array: parents %v, want [-1 0]", got)
	}
}

// hashOf is the prefix index's hash of ids.
func hashOf(ids []int) uint64 {
	h := uint64(0)
	for _, id := range ids {
		h = mix(h, id)
	}
	return h
}
