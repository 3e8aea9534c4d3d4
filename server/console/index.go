package console

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/wire"
)

// The episode index: one summary per record file of record_dir, kept in
// memory and brought up to date incrementally. A refresh (at most once per
// indexRefresh, on a request) lists the directory and reads only the files
// whose size or modification time changed since it last looked, and of a
// file that grew only the bytes it had not read (record files are only
// appended to). Memory is bounded: at most maxIndexed files (the newest),
// each with at most maxSearchText bytes of its text and maxSamples
// latencies of each kind.

// Bounds of the index.
const (
	maxIndexed     = 20000           // record files indexed (the newest by modification time)
	maxSearchText  = 2048            // bytes of an episode's messages and responses kept for search
	maxSamples     = 32              // turn and model-call latencies kept per episode
	maxRecordLine  = 8 << 20         // a longer record line is skipped
	indexRefresh   = 1 * time.Second // the directory is listed at most this often
	exportSuffix   = ".export.json"
	recordSuffix   = ".jsonl"
	statusRunning  = "running"    // a live session is running a turn of it
	statusActive   = "active"     // a live session holds it, between turns
	statusDone     = "done"       // it ended (done), without a failure
	statusFailed   = "failed"     // it ended with an error type
	statusOpen     = "incomplete" // no live session holds it and it did not end
	errorTypeNone  = "none"       // the error-type filter's value for "no error"
	maxFacetValues = 200          // distinct values listed per facet
)

// EpisodeSummary is one episode as the console's episodes table lists it.
type EpisodeSummary struct {
	ID         string   `json:"id"`
	Task       string   `json:"task,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	Config     string   `json:"config,omitempty"`
	Status     string   `json:"status"`
	Reward     *float64 `json:"reward"`
	Turns      int      `json:"turns"`
	DurationMS float64  `json:"duration_ms"`
	Tokens     int      `json:"tokens"`
	ErrorType  string   `json:"error_type,omitempty"`
	Started    float64  `json:"started"`
	SessionID  string   `json:"session_id,omitempty"`
	// Record is the record file's name in record_dir ("" for a live
	// episode without one); Export says its training export is there.
	Record string `json:"record,omitempty"`
	Export bool   `json:"export,omitempty"`
	// Live says a live session holds the episode.
	Live bool `json:"live,omitempty"`
	// ForkedFrom says which episode, at which turn, this one was forked
	// from; Forks counts the siblings forked from it; Depth is how many
	// forks down from an episode of the same list it is (the list puts an
	// episode's forks right after it).
	ForkedFrom *wire.ForkOrigin `json:"forked_from,omitempty"`
	Forks      int              `json:"forks,omitempty"`
	Depth      int              `json:"depth,omitempty"`
}

// indexEntry is one record file in the index.
type indexEntry struct {
	sum      EpisodeSummary
	size     int64     // the file's size when last read
	mtime    time.Time // its modification time then
	offset   int64     // bytes consumed (whole lines)
	last     float64   // the latest record time
	ended    bool      // an observation said done
	text     []byte    // lowercased messages and responses, up to maxSearchText
	msgTime  map[int]float64
	turnMS   []float64 // turn latencies: message to observation
	modelMS  []float64 // model-call latencies (llm_response latency_ms)
	gwTokens int       // tokens the gateway counted
	hTokens  int       // tokens the harness reported
}

// episodeIndex indexes record_dir.
type episodeIndex struct {
	dir string

	mu      sync.Mutex
	entries map[string]*indexEntry // by record file name
	exports map[string]bool        // episode file bases with an export
	scanned time.Time
	every   time.Duration // indexRefresh (tests: 0)
	reads   int           // record files opened, for tests
	err     error         // the last listing's failure
}

func newEpisodeIndex(dir string) *episodeIndex {
	return &episodeIndex{dir: dir, entries: map[string]*indexEntry{}, exports: map[string]bool{}, every: indexRefresh}
}

// query brings the index up to date (when indexRefresh has passed) and
// calls f with every entry, under the index's lock: f must not keep them.
func (x *episodeIndex) query(f func(entries []*indexEntry)) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dir != "" && time.Since(x.scanned) >= x.every {
		x.err = x.refresh()
		x.scanned = time.Now()
	}
	out := make([]*indexEntry, 0, len(x.entries))
	for _, e := range x.entries {
		e.sum.Export = x.exports[strings.TrimSuffix(e.sum.Record, recordSuffix)]
		out = append(out, e)
	}
	f(out)
	return x.err
}

// refresh lists the directory and reads what changed. Called with mu held.
func (x *episodeIndex) refresh() error {
	dirents, err := os.ReadDir(x.dir)
	if errors.Is(err, fs.ErrNotExist) {
		clear(x.entries)
		clear(x.exports)
		return nil
	}
	if err != nil {
		return err
	}
	type file struct {
		name string
		info fs.FileInfo
	}
	var files []file
	exports := map[string]bool{}
	for _, d := range dirents {
		name := d.Name()
		if !d.Type().IsRegular() || strings.HasPrefix(name, ".") {
			continue
		}
		if base, ok := strings.CutSuffix(name, exportSuffix); ok {
			exports[base] = true
			continue
		}
		if !validRecordName(name) {
			continue
		}
		info, err := d.Info()
		if err != nil {
			continue // removed since the listing
		}
		files = append(files, file{name, info})
	}
	x.exports = exports
	if len(files) > maxIndexed {
		sort.Slice(files, func(i, j int) bool { return files[i].info.ModTime().After(files[j].info.ModTime()) })
		files = files[:maxIndexed]
	}
	seen := make(map[string]bool, len(files))
	var root *os.Root
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	for _, f := range files {
		seen[f.name] = true
		e := x.entries[f.name]
		if e != nil && e.size == f.info.Size() && e.mtime.Equal(f.info.ModTime()) {
			continue
		}
		if e == nil || f.info.Size() < e.offset {
			e = &indexEntry{sum: EpisodeSummary{Record: f.name, ID: strings.TrimSuffix(f.name, recordSuffix), Status: statusOpen}}
			x.entries[f.name] = e
		}
		if root == nil {
			if root, err = os.OpenRoot(x.dir); err != nil {
				return err
			}
		}
		e.size, e.mtime = f.info.Size(), f.info.ModTime()
		x.reads++
		if err := e.readFrom(root); err != nil {
			continue // read again when it changes
		}
	}
	for name := range x.entries {
		if !seen[name] {
			delete(x.entries, name)
		}
	}
	return nil
}

// readFrom reads e's record file from its offset to its end, whole lines
// only (a line being written is read on a later refresh).
func (e *indexEntry) readFrom(root *os.Root) error {
	f, err := root.Open(e.sum.Record)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(e.offset, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 16<<10)
	for {
		line, n, err := readLine(r, maxRecordLine)
		if err != nil {
			return nil // EOF, or a partial last line: read it next time
		}
		e.offset += n
		if line != nil {
			e.add(line)
		}
	}
}

// readLine reads one line with its newline; n counts the bytes consumed.
// A line longer than limit is consumed and returned as nil. A line without
// its newline yet is io.EOF.
func readLine(r *bufio.Reader, limit int) ([]byte, int64, error) {
	var buf []byte
	var n int64
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if !long {
			if len(buf)+len(chunk) > limit {
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if long {
				return nil, n, nil
			}
			return buf, n, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, n, io.EOF
		}
	}
}

// indexRecord is what the index reads of a record line (the rest of the
// line, event payloads mostly, is not decoded).
type indexRecord struct {
	Kind      string  `json:"kind"`
	Time      float64 `json:"time"`
	EpisodeID string  `json:"episode_id"`
	SessionID string  `json:"session_id"`
	Config    string  `json:"config"`
	Agent     string  `json:"agent"`
	Turn      int     `json:"turn"`
	Content   *string `json:"content"`
	Event     *struct {
		Type   string `json:"type"`
		Source string `json:"source"`
		Data   struct {
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			} `json:"usage"`
			LatencyMS *float64 `json:"latency_ms"`
		} `json:"data"`
	} `json:"event"`
	Observation *struct {
		Reward   *float64 `json:"reward"`
		Done     bool     `json:"done"`
		Metadata struct {
			TaskID     string  `json:"task_id"`
			ErrorType  string  `json:"error_type"`
			Response   *string `json:"response"`
			TurnNumber int     `json:"turn_number"`
		} `json:"metadata"`
	} `json:"observation"`
}

// add folds one record line into e.
func (e *indexEntry) add(line []byte) {
	var r indexRecord
	if json.Unmarshal(line, &r) != nil {
		return
	}
	s := &e.sum
	if r.Time > e.last {
		e.last = r.Time
	}
	switch r.Kind {
	case "reset":
		if r.EpisodeID != "" {
			s.ID = r.EpisodeID
		}
		s.SessionID, s.Config, s.Agent, s.Started = r.SessionID, r.Config, r.Agent, r.Time
	case "message":
		if r.Content != nil {
			e.addText(*r.Content)
		}
		if e.msgTime == nil {
			e.msgTime = map[int]float64{}
		}
		e.msgTime[r.Turn] = r.Time
	case "event":
		ev := r.Event
		if ev == nil || ev.Type != "llm_response" {
			break
		}
		if u := ev.Data.Usage; u != nil {
			t := u.Total
			if t == 0 {
				t = u.Prompt + u.Completion
			}
			if ev.Source == "gateway" {
				e.gwTokens += t
			} else {
				e.hTokens += t
			}
		}
		if ev.Data.LatencyMS != nil && len(e.modelMS) < maxSamples {
			e.modelMS = append(e.modelMS, *ev.Data.LatencyMS)
		}
	case "observation":
		o := r.Observation
		if o == nil {
			break
		}
		m := o.Metadata
		if m.TaskID != "" {
			s.Task = m.TaskID
		}
		turn := r.Turn
		if turn == 0 {
			turn = m.TurnNumber
		}
		if turn > 0 {
			s.Turns = max(s.Turns, turn)
			if t, ok := e.msgTime[turn]; ok {
				if len(e.turnMS) < maxSamples {
					e.turnMS = append(e.turnMS, (r.Time-t)*1000)
				}
				delete(e.msgTime, turn)
			}
		}
		if m.Response != nil {
			e.addText(*m.Response)
		}
		if o.Reward != nil {
			v := *o.Reward
			s.Reward = &v
		}
		if m.ErrorType != "" {
			s.ErrorType = m.ErrorType
		}
		if o.Done {
			e.ended = true
		}
	}
	if e.gwTokens > 0 {
		s.Tokens = e.gwTokens
	} else {
		s.Tokens = e.hTokens
	}
	if s.Started > 0 && e.last > s.Started {
		s.DurationMS = (e.last - s.Started) * 1000
	}
	switch {
	case s.ErrorType != "":
		s.Status = statusFailed
	case e.ended:
		s.Status = statusDone
	default:
		s.Status = statusOpen
	}
}

// addText keeps text (lowercased) for search, up to maxSearchText bytes.
func (e *indexEntry) addText(text string) {
	room := maxSearchText - len(e.text)
	if room <= 0 {
		return
	}
	if len(e.text) > 0 {
		e.text = append(e.text, '\n')
		room--
	}
	t := strings.ToLower(text)
	if len(t) > room {
		t = t[:room]
	}
	e.text = append(e.text, t...)
}
