package gateway

import (
	"slices"
	"sort"
)

// Chains link calls by exact token prefix: a call's parent is the earlier
// call (by call index) whose prompt+completion ids are the longest exact
// prefix of its prompt ids, the latest such call among equally long ones.
// A call without a parent starts a new chain (a break: compaction, a
// sub-agent, a template that strips earlier reasoning); a call whose
// parent already has a child (a regenerated answer) starts a branch, which
// inherits the parent's tokens as masked context.
//
// The parent is chosen once, when the call is recorded, through an index
// of block-aligned prefixes (as an engine's prefix cache does): each
// trainable call is filed under the hash of its prompt+completion's
// longest block-aligned prefix, so matching a new prompt hashes its blocks
// once and looks up keys from its last block back, checking the few calls
// filed there, until one is truly a prefix: no work per earlier call. The
// chosen parent is verified token by token, so a hash collision can cost a
// comparison but never change the choice.

// blockSize is the prefix index's block, in tokens.
const blockSize = 32

// mix extends the hash h of a token sequence by token id.
func mix(h uint64, id int) uint64 { return h*1099511628211 + uint64(id) + 1 }

// seqLen is the length of a call's prompt followed by its completion.
func (c *call) seqLen() int { return len(c.promptIDs) + len(c.completionIDs) }

// seqAt is token i of a call's prompt followed by its completion.
func (c *call) seqAt(i int) int {
	if i < len(c.promptIDs) {
		return c.promptIDs[i]
	}
	return c.completionIDs[i-len(c.promptIDs)]
}

// isPrefix reports whether p's prompt+completion is an exact prefix of ids.
// The prompt is compared only where it is not the very memory of ids
// (sameIDs): a conversation's prompts share their array (idsMemo appends
// the next prompt's ids in place), so extending the call before costs the
// completion's comparison, not the conversation's.
func isPrefix(p *call, ids []int) bool {
	n := len(p.promptIDs)
	return n+len(p.completionIDs) <= len(ids) &&
		sameIDs(p.promptIDs, ids[:n]) && slices.Equal(p.completionIDs, ids[n:n+len(p.completionIDs)])
}

// sameIDs reports whether a and b, of equal length, hold the same ids:
// true without reading them when they start at the same element (then
// they are the same memory, and a recorded call's ids are never written:
// idsMemo appends only past every list it returned), else compared.
func sameIDs(a, b []int) bool {
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

// better reports whether j is a better parent than p (nil: none) for a
// call both are exact prefixes of: longer, or as long and later.
func better(j, p *call) bool {
	if p == nil {
		return true
	}
	lj, lp := j.seqLen(), p.seqLen()
	return lj > lp || (lj == lp && j.index > p.index)
}

// prefixIndex holds an episode's trainable calls, their parents and the
// index that finds them. It is guarded by the gateway's mutex.
type prefixIndex struct {
	// byBlock files each call under the hash of its prompt+completion's
	// first k blocks, k = seqLen / blockSize.
	byBlock map[uint64][]*call
	// cands are the trainable calls in call index order.
	cands []*call
	// anyTools says whether some trainable call offers tools.
	anyTools bool
	// last is the trainable call recorded last: the likely parent of the
	// next one, tried first.
	last *call
}

// add records trainable call c: it picks c's parent among the calls with
// a lower index, files c in the index, and, when calls with a higher index
// were recorded first (concurrent calls), makes c their parent where it is
// the better one.
func (x *prefixIndex) add(c *call) {
	if x.byBlock == nil {
		x.byBlock = map[uint64][]*call{}
	}
	pos := sort.Search(len(x.cands), func(i int) bool { return x.cands[i].index > c.index })
	x.cands = slices.Insert(x.cands, pos, c)
	x.anyTools = x.anyTools || c.offersTools
	parent, h, k := x.match(c.promptIDs, c.index)
	x.setParent(c, parent)
	x.last = c
	// The prompt's first k blocks hash to h; the rest of c's filing key
	// continues over the prompt's tail and the completion.
	n := c.seqLen()
	for i := k * blockSize; i < n/blockSize*blockSize; i++ {
		h = mix(h, c.seqAt(i))
	}
	c.key = h
	x.byBlock[h] = append(x.byBlock[h], c)
	for _, later := range x.cands[pos+1:] {
		if better(c, later.parent) && isPrefix(c, later.promptIDs) {
			x.setParent(later, c)
		}
	}
}

// match returns the best parent for a prompt among the indexed calls with
// an index below before (nil: none), and the hash h of the prompt's first
// k full blocks. It hashes the prompt's blocks, then looks from the last
// block back: calls filed at a later block are longer than any filed
// before it, so the first block holding a call that is truly a prefix
// holds the parent. When the call recorded last is a prefix (the common
// case: the agent continues its conversation), no call filed before its
// block can be longer, and its filing key is the hash of the prompt up to
// there: only the tokens after it are hashed.
func (x *prefixIndex) match(prompt []int, before int) (parent *call, h uint64, k int) {
	full := len(prompt) / blockSize
	from, base := 0, uint64(0)
	var verified *call // the last call, known to be a prefix
	if p := x.last; p != nil && p.index < before && isPrefix(p, prompt) {
		from, base, verified = p.seqLen()/blockSize, p.key, p
	}
	hashes := make([]uint64, full-from+1) // hashes[k-from]: the prompt's first k blocks
	hashes[0] = base
	for k := from; k < full; k++ {
		h := hashes[k-from]
		for _, id := range prompt[k*blockSize : (k+1)*blockSize] {
			h = mix(h, id)
		}
		hashes[k+1-from] = h
	}
	h = hashes[full-from]
	var found []*call
	for k := full; k >= from; k-- {
		found = found[:0]
		for _, j := range x.byBlock[hashes[k-from]] {
			n := j.seqLen()
			if j.index >= before || n > len(prompt) || n/blockSize != k {
				continue
			}
			tail := true
			for i := k * blockSize; i < n && tail; i++ {
				tail = j.seqAt(i) == prompt[i]
			}
			if tail {
				found = append(found, j)
			}
		}
		// Best first; the first one that is truly a prefix wins (the
		// others are hash collisions or shorter).
		sort.Slice(found, func(a, b int) bool { return better(found[a], found[b]) })
		for _, j := range found {
			if j == verified || isPrefix(j, prompt) {
				return j, h, full
			}
		}
	}
	return nil, h, full
}

// setParent makes p (nil: none) c's parent, keeping the children lists.
func (x *prefixIndex) setParent(c, p *call) {
	if old := c.parent; old != nil {
		old.children = slices.DeleteFunc(old.children, func(o *call) bool { return o == c })
	}
	c.parent = p
	if p != nil {
		at := sort.Search(len(p.children), func(i int) bool { return p.children[i].index > c.index })
		p.children = slices.Insert(p.children, at, c)
	}
}

// auxiliary reports whether trainable call c is a side call kept out of
// the chains: it offers no tools while another call does, and extends or
// is extended by none.
func (x *prefixIndex) auxiliary(c *call) bool {
	return x.anyTools && !c.offersTools && c.parent == nil && len(c.children) == 0
}

// startsChain reports whether trainable call c starts a chain of the
// export: a root, or a branch (its parent has a child of lower index).
func (x *prefixIndex) startsChain(c *call) bool {
	return !x.auxiliary(c) && (c.parent == nil || c.parent.children[0] != c)
}

// chainBreak returns the chain a trainable call starts when it extends no
// earlier call and is not the episode's first chain (0: it is no break).
// Only a call without a parent pays for counting the chains before it.
func (x *prefixIndex) chainBreak(c *call) int {
	if c.parent != nil || x.auxiliary(c) {
		return 0
	}
	id := 0
	for _, o := range x.cands {
		if o.index > c.index {
			break
		}
		if x.startsChain(o) {
			id++
		}
	}
	if id > 1 {
		return id
	}
	return 0
}

// parentPositions returns, per call of cands (x.cands or a prefix of it
// in index order), the position of its parent in cands, or -1.
func parentPositions(cands []*call) []int {
	at := make(map[*call]int, len(cands))
	for i, c := range cands {
		at[c] = i
	}
	out := make([]int, len(cands))
	for i, c := range cands {
		out[i] = -1
		if p, ok := at[c.parent]; ok && c.parent != nil {
			out[i] = p
		}
	}
	return out
}

// byIndex sorts calls by call index.
func byIndex(calls []*call) []*call {
	out := slices.Clone(calls)
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out
}
