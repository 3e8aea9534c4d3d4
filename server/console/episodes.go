package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/wire"
)

// The episodes API: GET /web/api/episodes lists every episode (the
// record_dir's, through the index, and the live sessions'), filtered,
// searched, sorted and paginated on the server; GET /web/api/episodes/{id}
// is one episode's records and training export.

// Bounds of the episodes API.
const (
	defaultPageSize = 50
	maxPageSize     = 500
	maxExportBytes  = 32 << 20 // a larger training export is not shown
)

// episodeQuery is a parsed GET /web/api/episodes query.
type episodeQuery struct {
	sort      string // a key of episodeLess
	desc      bool
	task      string
	status    string
	errorType string // errorTypeNone: no error
	rmin      *float64
	rmax      *float64
	q         string // lowercased
	offset    int
	limit     int
}

// parseEpisodeQuery reads sort (a column, "-" first for descending),
// task, status, error_type, reward_min, reward_max, q, offset and limit.
func parseEpisodeQuery(v url.Values) (episodeQuery, error) {
	q := episodeQuery{sort: "started", desc: true, limit: defaultPageSize,
		task: v.Get("task"), status: v.Get("status"), errorType: v.Get("error_type"), q: strings.ToLower(strings.TrimSpace(v.Get("q")))}
	if s := v.Get("sort"); s != "" {
		q.desc = strings.HasPrefix(s, "-")
		q.sort = strings.TrimPrefix(s, "-")
		if _, ok := episodeLess[q.sort]; !ok {
			return q, fmt.Errorf("sort %q: not one of %s", q.sort, strings.Join(sortKeys(), ", "))
		}
	}
	for name, dst := range map[string]**float64{"reward_min": &q.rmin, "reward_max": &q.rmax} {
		if s := v.Get(name); s != "" {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return q, fmt.Errorf("%s %q: not a number", name, s)
			}
			*dst = &f
		}
	}
	for name, dst := range map[string]*int{"offset": &q.offset, "limit": &q.limit} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return q, fmt.Errorf("%s %q: not a count", name, s)
			}
			*dst = n
		}
	}
	q.limit = min(max(q.limit, 1), maxPageSize)
	return q, nil
}

// match reports whether e passes q's filters and search.
func (q *episodeQuery) match(e *indexEntry) bool {
	s := &e.sum
	switch {
	case q.task != "" && s.Task != q.task,
		q.status != "" && s.Status != q.status,
		q.errorType == errorTypeNone && s.ErrorType != "",
		q.errorType != "" && q.errorType != errorTypeNone && s.ErrorType != q.errorType,
		(q.rmin != nil || q.rmax != nil) && s.Reward == nil,
		q.rmin != nil && *s.Reward < *q.rmin,
		q.rmax != nil && *s.Reward > *q.rmax:
		return false
	}
	if q.q == "" {
		return true
	}
	return bytes.Contains(e.text, []byte(q.q)) || strings.Contains(strings.ToLower(s.ID), q.q) ||
		strings.Contains(strings.ToLower(s.Task), q.q)
}

// episodeLess orders two summaries by a column.
var episodeLess = map[string]func(a, b *EpisodeSummary) int{
	"started":    func(a, b *EpisodeSummary) int { return cmpFloat(a.Started, b.Started) },
	"reward":     func(a, b *EpisodeSummary) int { return cmpReward(a.Reward, b.Reward) },
	"turns":      func(a, b *EpisodeSummary) int { return a.Turns - b.Turns },
	"duration":   func(a, b *EpisodeSummary) int { return cmpFloat(a.DurationMS, b.DurationMS) },
	"tokens":     func(a, b *EpisodeSummary) int { return a.Tokens - b.Tokens },
	"task":       func(a, b *EpisodeSummary) int { return strings.Compare(a.Task, b.Task) },
	"agent":      func(a, b *EpisodeSummary) int { return strings.Compare(a.Agent, b.Agent) },
	"status":     func(a, b *EpisodeSummary) int { return strings.Compare(a.Status, b.Status) },
	"error_type": func(a, b *EpisodeSummary) int { return strings.Compare(a.ErrorType, b.ErrorType) },
	"id":         func(a, b *EpisodeSummary) int { return strings.Compare(a.ID, b.ID) },
}

func sortKeys() []string {
	out := make([]string, 0, len(episodeLess))
	for k := range episodeLess {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpReward orders rewards, no reward first.
func cmpReward(a, b *float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return cmpFloat(*a, *b)
}

// Facet is one value of a column and how many episodes have it.
type Facet struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// facets counts each value of column, the commonest first, up to
// maxFacetValues.
func facets(entries []*indexEntry, column func(*EpisodeSummary) string) []Facet {
	n := map[string]int{}
	for _, e := range entries {
		n[column(&e.sum)]++
	}
	out := make([]Facet, 0, len(n))
	for v, c := range n {
		out = append(out, Facet{v, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out[:min(len(out), maxFacetValues)]
}

// withLive runs f over the index's entries and the live sessions'
// episodes: a live episode with a record file takes its status from its
// session; one without (no record_dir) is described from the console's log.
func (c *Console) withLive(f func([]*indexEntry)) error {
	type live struct {
		s *SessionSummary
		m Session
	}
	lives := map[string]live{}
	for _, m := range c.o.Sessions() {
		s := c.webSummary(m)
		if s.EpisodeID != "" && (s.State == statusRunning || s.State == statusActive) {
			lives[recordfile.FileName(s.EpisodeID)+recordSuffix] = live{s, m}
		}
	}
	return c.index.query(func(entries []*indexEntry) {
		// The index's entries are not changed: a live one is a copy.
		all := make([]*indexEntry, 0, len(entries)+len(lives))
		for _, e := range entries {
			if l, ok := lives[e.sum.Record]; ok {
				cp := *e
				cp.sum.Live, cp.sum.Status, cp.sum.SessionID = true, l.s.State, l.s.ID
				e = &cp
				delete(lives, e.sum.Record)
			}
			all = append(all, e)
		}
		for _, l := range lives {
			all = append(all, c.log(l.m.ID).entry(l.s))
		}
		f(all)
	})
}

// entry describes the log's episode as the index would its record file
// (for a live episode without one: no record_dir).
func (l *webLog) entry(s *SessionSummary) *indexEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := &indexEntry{sum: EpisodeSummary{ID: s.EpisodeID}}
	recs := make([]wire.Record, 0, 2*l.turns.len()+2)
	if l.reset != nil {
		recs = append(recs, *l.reset)
	}
	l.turns.each(func(t *turnEntry) {
		if m, ok := t.message(); ok {
			recs = append(recs, m)
		}
		recs = append(recs, t.observation())
	})
	if l.hasMsg {
		recs = append(recs, l.msg)
	}
	for _, r := range recs {
		if b, err := wire.MarshalNoEscape(r); err == nil {
			e.add(b)
		}
	}
	e.sum.ID, e.sum.SessionID, e.sum.Live, e.sum.Status = s.EpisodeID, s.ID, true, s.State
	return e
}

func (c *Console) handleWebEpisodes(w http.ResponseWriter, r *http.Request) {
	q, err := parseEpisodeQuery(r.URL.Query())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": err.Error()})
		return
	}
	out := map[string]any{"record_dir": c.o.Config.RecordDir}
	links := c.forkLinks()
	err = c.withLive(func(all []*indexEntry) {
		var hits []*indexEntry
		for _, e := range all {
			if q.match(e) {
				hits = append(hits, e)
			}
		}
		less := episodeLess[q.sort]
		sort.Slice(hits, func(i, j int) bool {
			d := less(&hits[i].sum, &hits[j].sum)
			if d == 0 {
				d = strings.Compare(hits[i].sum.ID, hits[j].sum.ID)
			}
			if q.desc {
				return d > 0
			}
			return d < 0
		})
		hits, depth := links.branchOrder(hits)
		page := make([]EpisodeSummary, 0, q.limit)
		from, to := min(q.offset, len(hits)), min(q.offset+q.limit, len(hits))
		for i, e := range hits[from:to] {
			sum := e.sum
			sum.ForkedFrom, sum.Forks, sum.Depth = links.origin(sum.ID), len(links.children[sum.ID]), depth[from+i]
			page = append(page, sum)
		}
		out["total"], out["indexed"], out["offset"], out["limit"], out["episodes"] = len(hits), len(all), q.offset, q.limit, page
		out["facets"] = map[string][]Facet{
			"task":       facets(all, func(s *EpisodeSummary) string { return s.Task }),
			"status":     facets(all, func(s *EpisodeSummary) string { return s.Status }),
			"error_type": facets(all, func(s *EpisodeSummary) string { return s.ErrorType }),
		}
	})
	if err != nil {
		out["index_error"] = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

// handleWebEpisodeByID is one episode: its records (the live session's, or
// its record file's) and its training export when there is one.
func (c *Console) handleWebEpisodeByID(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	out := map[string]any{"episode_id": id}
	links := c.forkLinks()
	if o := links.origin(id); o != nil {
		out["forked_from"] = o
	}
	out["forks"] = links.forksOf(id, func(sid string) bool { _, ok := c.o.Lookup(sid); return ok })
	for _, m := range c.o.Sessions() {
		st := m.Session.State()
		if st.EpisodeID == nil || *st.EpisodeID != id {
			continue
		}
		recs, om := c.liveRecords(m)
		out["live"], out["session_id"], out["records"] = true, m.ID, recs
		if om != nil {
			out["omitted"] = om
		}
		if ex, err := m.Session.Export(id); err == nil {
			out["export"] = ex
		} else {
			out["export_note"] = err.Error()
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	dir := c.o.Config.RecordDir
	if dir == "" {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": fmt.Sprintf("no live episode %q, and no record_dir is configured", id)})
		return
	}
	name := filepath.Base(recordfile.Record(dir, id))
	recs, err := readRecordFile(dir, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": fmt.Sprintf("no episode %q", id)})
		return
	case err != nil:
		out["error"] = err.Error()
	}
	out["record"], out["records"] = name, recs
	ex, err := readExport(dir, filepath.Base(recordfile.Export(dir, id)))
	switch {
	case err == nil:
		out["export"] = ex
	case !errors.Is(err, fs.ErrNotExist):
		out["export_note"] = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

// readExport reads record_dir's training export name, up to maxExportBytes.
func readExport(dir, name string) (json.RawMessage, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening record_dir: %w", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening the training export: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxExportBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading the training export: %w", err)
	case len(b) > maxExportBytes:
		return nil, fmt.Errorf("the training export is larger than %d MiB: not shown", maxExportBytes>>20)
	case !json.Valid(b):
		return nil, errors.New("the training export is not valid JSON")
	}
	return b, nil
}
