package gateway

import (
	"slices"
	"sort"
)

// Chains link calls by exact token prefix: a call's parent is the earlier
// call whose prompt+completion ids are the longest exact prefix of its
// prompt ids. A call without a parent starts a new chain (a break:
// compaction, a sub-agent, a template that strips earlier reasoning); a
// call whose parent already has a child (a regenerated answer) starts a
// branch, which inherits the parent's tokens as masked context.

// prefixHashes returns h where h[i] is the hash of ids[:i].
func prefixHashes(ids []int) []uint64 {
	h := make([]uint64, len(ids)+1)
	for i, id := range ids {
		h[i+1] = h[i]*1099511628211 + uint64(id) + 1
	}
	return h
}

// fullHash is the hash of a call's prompt followed by its completion.
func fullHash(c *call) uint64 {
	var h uint64
	for _, id := range c.promptIDs {
		h = h*1099511628211 + uint64(id) + 1
	}
	for _, id := range c.completionIDs {
		h = h*1099511628211 + uint64(id) + 1
	}
	return h
}

// isPrefix reports whether p's prompt+completion is an exact prefix of ids.
func isPrefix(p *call, ids []int) bool {
	n := len(p.promptIDs)
	return n+len(p.completionIDs) <= len(ids) &&
		slices.Equal(p.promptIDs, ids[:n]) && slices.Equal(p.completionIDs, ids[n:n+len(p.completionIDs)])
}

// parents returns, per call (in index order), the index of its parent
// among calls, or -1.
func parents(calls []*call) []int {
	hashes := make([]uint64, len(calls))
	for i, c := range calls {
		hashes[i] = fullHash(c)
	}
	out := make([]int, len(calls))
	for i, c := range calls {
		out[i] = -1
		h := prefixHashes(c.promptIDs)
		best := -1
		for j := 0; j < i; j++ {
			p := calls[j]
			n := len(p.promptIDs) + len(p.completionIDs)
			if n > len(c.promptIDs) || h[n] != hashes[j] {
				continue
			}
			if best < 0 || n >= len(calls[best].promptIDs)+len(calls[best].completionIDs) {
				if isPrefix(p, c.promptIDs) {
					best = j
				}
			}
		}
		out[i] = best
	}
	return out
}

// byIndex sorts calls by call index.
func byIndex(calls []*call) []*call {
	out := slices.Clone(calls)
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out
}
