package console

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestForkBranchesOverTenThousand: 10,000 record files and 4,096 fork
// links (episodes 0–2,047 forked twice each into episodes 2,048–6,143) —
// the bound of links the server keeps. Sorted by id, each parent is
// followed by its two siblings at depth 1, every episode is listed once,
// the counts and origins are right, a link cycle (never made by a fork)
// loses no episode; the cost of a page with the links against one without
// is logged, not asserted.
func TestForkBranchesOverTenThousand(t *testing.T) {
	const n, parents = 10000, 2048
	dir := t.TempDir()
	for i := range n {
		lines := recordLines(t, fmt.Sprintf("ep-%05d", i), "task", "message", 0.5)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("ep-%05d.jsonl", i)), []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var links []Fork
	c := testConsole(dir)
	listEpisodes(t, c, "") // build the index
	c.index.every = time.Hour
	for p := range parents {
		for k := range 2 {
			links = append(links, Fork{SessionID: fmt.Sprintf("s-%d-%d", p, k), EpisodeID: fmt.Sprintf("ep-%05d", parents+2*p+k),
				ParentSessionID: fmt.Sprintf("s-%d", p), ParentEpisodeID: fmt.Sprintf("ep-%05d", p), AtTurn: 1, Mechanism: "replay"})
		}
	}
	// A cycle between two episodes no fork made.
	links = append(links, Fork{EpisodeID: "ep-09998", ParentEpisodeID: "ep-09999"}, Fork{EpisodeID: "ep-09999", ParentEpisodeID: "ep-09998"})
	// The cost of a page with and without the links, interleaved (the
	// machine is shared): the median of 7 rounds of 5 queries each.
	const rounds, queries = 7, 5
	var without, with []time.Duration
	var p episodesPage
	for range rounds {
		for _, on := range []bool{false, true} {
			c.o.Forks = nil
			if on {
				c.o.Forks = func() []Fork { return links }
			}
			start := time.Now()
			for range queries {
				p = listEpisodes(t, c, "sort=id&offset=300")
			}
			d := time.Since(start) / queries
			if on {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
		}
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	// Offset 300 of the branch order: parent 100 and its siblings (300 =
	// 3 × 100).
	want := []string{"ep-00100/0/2", "ep-02248/1/0", "ep-02249/1/0", "ep-00101/0/2"}
	var got []string
	for _, e := range p.Episodes[:4] {
		got = append(got, fmt.Sprintf("%s/%d/%d", e.ID, e.Depth, e.Forks))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("page at offset 300 starts %v, want %v", got, want)
	}
	if o := p.Episodes[1].ForkedFrom; o == nil || o.ParentEpisodeID != "ep-00100" || o.ParentSessionID != "s-100" || o.AtTurn != 1 || o.Mechanism != "replay" {
		t.Errorf("ep-02248 forked from %+v", o)
	}
	seen := map[string]int{}
	for off := 0; off < n; off += maxPageSize {
		for _, e := range listEpisodes(t, c, fmt.Sprintf("sort=id&limit=%d&offset=%d", maxPageSize, off)).Episodes {
			seen[e.ID]++
		}
	}
	if len(seen) != n {
		t.Errorf("the pages list %d distinct episodes, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s listed %d times", id, k)
		}
	}
	t.Logf("10,000 episodes, a page sorted by id (median of %d rounds, min–max): %v (%v–%v) without fork links, %v (%v–%v) with 4,096",
		rounds, median(without), without[0], without[rounds-1], median(with), with[0], with[rounds-1])
}
