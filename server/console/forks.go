package console

import (
	"time"

	"github.com/harnessd/harnessd/wire"
)

// Forks in the console: a sibling a fork made is a session (and an
// episode) of its own; the console shows it as a branch of its parent.
// The server keeps the links (Options.Forks); the episodes API lists each
// episode's siblings right under it (with their depth, for the branch
// marker), and the episode API names an episode's parent and its forks.

// Fork is one sibling's link to the episode it was forked from.
type Fork struct {
	// SessionID and EpisodeID are the sibling's.
	SessionID, EpisodeID string
	// ParentSessionID and ParentEpisodeID are the forked session and
	// episode.
	ParentSessionID, ParentEpisodeID string
	// AtTurn is the parent's turn the sibling continues after.
	AtTurn int
	// Mechanism is how the sibling's harness state was carried over.
	Mechanism string
	// Time is when the fork was made.
	Time time.Time
}

// ForkChild is one sibling forked from an episode.
type ForkChild struct {
	SessionID string  `json:"session_id"`
	EpisodeID string  `json:"episode_id"`
	AtTurn    int     `json:"at_turn"`
	Mechanism string  `json:"mechanism,omitempty"`
	Time      float64 `json:"time"`
	// Live says a session still holds the sibling.
	Live bool `json:"live"`
}

// forkLinks indexes the server's fork links by episode.
type forkLinks struct {
	parent   map[string]Fork   // sibling episode -> its link
	children map[string][]Fork // parent episode -> its siblings' links, in fork order
}

// forkLinks reads the server's links now.
func (c *Console) forkLinks() forkLinks {
	if c.o.Forks == nil {
		return forkLinks{}
	}
	list := c.o.Forks()
	l := forkLinks{parent: make(map[string]Fork, len(list)), children: make(map[string][]Fork, len(list))}
	for _, f := range list {
		if f.EpisodeID == "" {
			continue
		}
		l.parent[f.EpisodeID] = f
		l.children[f.ParentEpisodeID] = append(l.children[f.ParentEpisodeID], f)
	}
	return l
}

// origin is where episode id was forked from (nil: it was not).
func (l forkLinks) origin(id string) *wire.ForkOrigin {
	f, ok := l.parent[id]
	if !ok {
		return nil
	}
	return &wire.ForkOrigin{ParentSessionID: f.ParentSessionID, ParentEpisodeID: f.ParentEpisodeID, AtTurn: f.AtTurn, Mechanism: f.Mechanism}
}

// branchOrder puts each hit's forks right after it (depth first, each
// level in the order hits has them), keeping hits' order among episodes
// whose parent is not among hits; it returns the depth of each: 0 for
// those, 1 for a sibling of one, and so on.
func (l forkLinks) branchOrder(hits []*indexEntry) ([]*indexEntry, []int) {
	depth := make([]int, len(hits))
	if len(l.parent) == 0 {
		return hits, depth
	}
	pos := make(map[string]int, len(hits))
	for i, e := range hits {
		pos[e.sum.ID] = i
	}
	// kids[i] lists hits[i]'s forks among hits, in hits' order.
	kids := map[int][]int{}
	root := make([]bool, len(hits))
	for i, e := range hits {
		root[i] = true
		if f, ok := l.parent[e.sum.ID]; ok {
			if p, ok := pos[f.ParentEpisodeID]; ok && p != i {
				kids[p] = append(kids[p], i)
				root[i] = false
			}
		}
	}
	out := make([]*indexEntry, 0, len(hits))
	seen := make([]bool, len(hits))
	var stack [][2]int // (index, depth), depth first
	visit := func(i int) {
		stack = append(stack[:0], [2]int{i, 0})
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[top[0]] {
				continue
			}
			seen[top[0]] = true
			out, depth[len(out)] = append(out, hits[top[0]]), top[1]
			k := kids[top[0]]
			for j := len(k) - 1; j >= 0; j-- { // pushed last first: popped in order
				stack = append(stack, [2]int{k[j], top[1] + 1})
			}
		}
	}
	for i := range hits {
		if root[i] {
			visit(i)
		}
	}
	// Links that form a cycle (never made by a fork) leave entries no root
	// reaches: they are listed at the end, unindented.
	for i := range hits {
		if !seen[i] {
			visit(i)
		}
	}
	return out, depth
}

// forksOf lists the siblings forked from episode id; live says which
// sessions are still open.
func (l forkLinks) forksOf(id string, live func(sessionID string) bool) []ForkChild {
	out := []ForkChild{}
	for _, f := range l.children[id] {
		out = append(out, ForkChild{SessionID: f.SessionID, EpisodeID: f.EpisodeID, AtTurn: f.AtTurn, Mechanism: f.Mechanism,
			Time: float64(f.Time.UnixNano()) / 1e9, Live: live(f.SessionID)})
	}
	return out
}
