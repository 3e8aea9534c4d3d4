package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/wire"
)

// recordLines is a small episode's record file, in the recorder's format.
func recordLines(t *testing.T, id, task, message string, reward float64) []string {
	t.Helper()
	resp := "done with " + id
	recs := []wire.Record{
		{Kind: wire.RecordReset, Time: 100, EpisodeID: id, Agent: "agent"},
		{Kind: wire.RecordObservation, Time: 100, Observation: &wire.Observation{Metadata: wire.Metadata{TaskID: task}}},
		{Kind: wire.RecordMessage, Time: 101, Turn: 1, Content: &message},
		{Kind: wire.RecordObservation, Time: 103.5, Turn: 1, Observation: &wire.Observation{Reward: &reward, Done: true,
			Metadata: wire.Metadata{TurnNumber: 1, Response: &resp}}},
	}
	var out []string
	for _, r := range recs {
		b, err := wire.MarshalNoEscape(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b)+"\n")
	}
	return out
}

func testConsole(dir string) *Console {
	c := New(Options{Config: &config.Config{RecordDir: dir}, Sessions: func() []Session { return nil }})
	c.index.every = 0
	return c
}

type episodesPage struct {
	Total    int
	Indexed  int
	Episodes []EpisodeSummary
}

func listEpisodes(t *testing.T, c *Console, query string) episodesPage {
	t.Helper()
	w := httptest.NewRecorder()
	c.handleWebEpisodes(w, httptest.NewRequest(http.MethodGet, "/web/api/episodes?"+query, nil))
	if w.Code != http.StatusOK {
		t.Fatalf("episodes?%s: %d %s", query, w.Code, w.Body)
	}
	var p episodesPage
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIndexIncremental: the index reads a record file's whole lines only,
// then of a grown file only its new bytes, re-reads a rewritten (shorter)
// file from its start, opens no file that did not change, and forgets
// removed files.
func TestIndexIncremental(t *testing.T) {
	dir := t.TempDir()
	c := testConsole(dir)
	lines := recordLines(t, "e1", "task-x", "hello", 1)
	path := filepath.Join(dir, "e1.jsonl")
	// The reset, the first observation and half the message line.
	half := lines[0] + lines[1] + lines[2][:10]
	if err := os.WriteFile(path, []byte(half), 0o644); err != nil {
		t.Fatal(err)
	}
	p := listEpisodes(t, c, "")
	if p.Total != 1 || p.Episodes[0].Status != statusOpen || p.Episodes[0].Task != "task-x" || p.Episodes[0].Turns != 0 {
		t.Fatalf("a record being written: %+v", p)
	}
	if off := c.index.entries["e1.jsonl"].offset; off != int64(len(lines[0])+len(lines[1])) {
		t.Errorf("offset %d after a partial line, want %d", off, len(lines[0])+len(lines[1]))
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(lines[2][10:] + lines[3])
	f.Close()
	os.Chtimes(path, time.Now(), time.Now().Add(time.Second)) // a coarse clock must not hide the change
	p = listEpisodes(t, c, "")
	e := p.Episodes[0]
	if e.Status != statusDone || e.Turns != 1 || e.Reward == nil || *e.Reward != 1 || e.DurationMS != 3500 || e.Agent != "agent" {
		t.Fatalf("the finished record: %+v", e)
	}
	if got := listEpisodes(t, c, "q=HELLO").Total; got != 1 {
		t.Errorf("search for the message's text: %d", got)
	}
	reads := c.index.reads
	listEpisodes(t, c, "")
	if c.index.reads != reads {
		t.Errorf("an unchanged directory opened %d files", c.index.reads-reads)
	}
	// Rewritten shorter: read again from the start.
	short := recordLines(t, "e1", "task-y", "bye", 0)
	if err := os.WriteFile(path, []byte(short[0]+short[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := listEpisodes(t, c, "").Episodes[0]; e.Task != "task-y" || e.Turns != 0 || e.Reward != nil {
		t.Errorf("a rewritten record: %+v", e)
	}
	os.Remove(path)
	if p := listEpisodes(t, c, ""); p.Indexed != 0 {
		t.Errorf("a removed record is still listed: %+v", p)
	}
}

// TestIndexSearchTextBounded: an episode keeps at most maxSearchText bytes
// of its text for search.
func TestIndexSearchTextBounded(t *testing.T) {
	var e indexEntry
	for range 100 {
		e.addText(strings.Repeat("x", 100))
	}
	if len(e.text) != maxSearchText {
		t.Errorf("search text %d bytes, want %d", len(e.text), maxSearchText)
	}
}

// TestIndexTenThousand lists, filters, searches and sorts 10,000 record
// files: it logs how long the first query (building the index) and later
// ones take, and checks that later queries open no file.
func TestIndexTenThousand(t *testing.T) {
	const n = 10000
	dir := t.TempDir()
	for i := range n {
		lines := recordLines(t, fmt.Sprintf("ep-%05d", i), fmt.Sprintf("task-%d", i%10), fmt.Sprintf("message %d", i), float64(i%4)/4)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("ep-%05d.jsonl", i)), []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := testConsole(dir)
	start := time.Now()
	p := listEpisodes(t, c, "")
	cold := time.Since(start)
	if p.Total != n || len(p.Episodes) != defaultPageSize {
		t.Fatalf("listed %d of %d", len(p.Episodes), p.Total)
	}
	reads := c.index.reads
	start = time.Now()
	listEpisodes(t, c, "")
	rescan := time.Since(start)
	// The index lists the directory at most once per indexRefresh: the
	// queries in between cost what follows.
	c.index.every = time.Hour
	start = time.Now()
	const queries = 20
	for i := range queries {
		p = listEpisodes(t, c, fmt.Sprintf("task=task-3&reward_min=0.5&sort=-reward&offset=%d", i*10))
	}
	warm := time.Since(start) / queries
	if p.Total != n/10/2 {
		t.Errorf("filtered %d, want %d", p.Total, n/20)
	}
	start = time.Now()
	s := listEpisodes(t, c, "q=message%20777")
	search := time.Since(start)
	if s.Total != 1+10 { // 777 and 7770–7779
		t.Errorf("search found %d", s.Total)
	}
	if c.index.reads != reads {
		t.Errorf("queries of an unchanged directory opened %d files", c.index.reads-reads)
	}
	t.Logf("10,000 record files: first query (index built) %v, a query that lists the directory again (nothing changed) %v, "+
		"between listings a filtered sorted page %v, a text search %v", cold, rescan, warm, search)
}
