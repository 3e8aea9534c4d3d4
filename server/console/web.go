package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/harnessd/harnessd/wire"
)

// The web console (simulation mode): GET /web is a single page, embedded
// from web/ (plain HTML, CSS and JavaScript, no library, no CDN, no build
// step), that reads the JSON API under /web/api/ and the live feed
// /web/api/events (server-sent events). The page and the API sit behind
// the API token like every orchestration surface (a browser passes it once
// as ?token=; the page keeps it for its own calls); the static script and
// stylesheet carry no data and are served without it.

//go:embed web
var webFiles embed.FS

// Bounds of the console's reads.
const (
	maxRecordFileBytes = 64 << 20 // a record file larger than this is refused
	maxRecordFiles     = 1000     // newest record files listed
	webHeartbeat       = 15 * time.Second
)

// webCSP keeps every script, style and connection of the page on this
// origin, so nothing in the page's data can load or run code.
const webCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Routes adds the console's page, assets, API and live feed to mux.
func (c *Console) Routes(mux *http.ServeMux) {
	g := c.o.Guard
	mux.Handle("GET /web", g(http.HandlerFunc(c.handleWebPage)))
	mux.Handle("GET /web/{$}", g(http.HandlerFunc(c.handleWebPage)))
	mux.Handle("GET /web/episodes", g(http.HandlerFunc(c.handleWebPage)))
	mux.Handle("GET /web/episodes/{id}", g(http.HandlerFunc(c.handleWebPage)))
	mux.Handle("GET /web/overview", g(http.HandlerFunc(c.handleWebPage)))
	mux.Handle("GET /web/api/episodes", g(http.HandlerFunc(c.handleWebEpisodes)))
	mux.Handle("GET /web/api/episodes/{id}", g(http.HandlerFunc(c.handleWebEpisodeByID)))
	mux.Handle("GET /web/api/overview", g(http.HandlerFunc(c.handleWebOverview)))
	mux.Handle("GET /web/assets/{name}", c.o.PeerOnly(http.HandlerFunc(c.handleWebAsset)))
	mux.Handle("GET /web/api/sessions", g(http.HandlerFunc(c.handleWebSessions)))
	mux.Handle("GET /web/api/sessions/{id}/episode", g(http.HandlerFunc(c.handleWebEpisode)))
	mux.Handle("POST /web/api/sessions/{id}/cancel", g(http.HandlerFunc(c.handleWebCancel)))
	mux.Handle("GET /web/api/records", g(http.HandlerFunc(c.handleWebRecords)))
	mux.Handle("GET /web/api/records/{name}", g(http.HandlerFunc(c.handleWebRecord)))
	mux.Handle("GET /web/api/events", g(http.HandlerFunc(c.handleWebEvents)))
}

func (c *Console) handleWebPage(w http.ResponseWriter, r *http.Request) {
	b, err := webFiles.ReadFile("web/index.html")
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"detail": "console page missing: " + err.Error()})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.Write(b)
}

func (c *Console) handleWebAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	ct := ""
	for ext, t := range types {
		if strings.HasSuffix(name, ext) {
			ct = t
		}
	}
	b, err := webFiles.ReadFile("web/" + name)
	if ct == "" || strings.ContainsAny(name, "/\\") || err != nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// webSessions lists every session for the console.
func (c *Console) webSessions() []*SessionSummary {
	list := c.o.Sessions()
	out := make([]*SessionSummary, 0, len(list))
	for _, m := range list {
		out = append(out, c.webSummary(m))
	}
	return out
}

func (c *Console) handleWebSessions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"sessions": c.webSessions(), "isolation": c.o.Isolation})
}

func (c *Console) webSession(w http.ResponseWriter, r *http.Request) (Session, bool) {
	id := r.PathValue("id")
	m, ok := c.o.Lookup(id)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": fmt.Sprintf("no session %q", id)})
	}
	return m, ok
}

func (c *Console) handleWebEpisode(w http.ResponseWriter, r *http.Request) {
	m, ok := c.webSession(w, r)
	if !ok {
		return
	}
	recs, om := c.liveRecords(m)
	out := map[string]any{"session": c.webSummary(m), "records": recs}
	if om != nil {
		out["omitted"] = om
	}
	writeJSON(w, http.StatusOK, out)
}

// liveRecords returns the records of m's episode the console shows, and
// which of its turns are left out (nil: none). The session keeps a window
// of the episode's latest turns' events, the console's log one of their
// messages and observations, each within the same bounds of turns and
// bytes: what either left out is left out of both, named, and the record
// file it is in, if any.
func (c *Console) liveRecords(m Session) ([]wire.Record, *WebOmitted) {
	evs, om := m.Session.TrajectoryWindow()
	recs, dropped := c.log(m.ID).records(evs)
	o := WebOmitted{Turns: om.Turns, LastTurn: om.LastTurn, RecordFile: om.RecordFile}
	if dropped.lastTurn > o.LastTurn {
		o.Turns, o.LastTurn = dropped.turns, dropped.lastTurn
	}
	if o.Turns == 0 {
		return recs, nil
	}
	return recs, &o
}

func (c *Console) handleWebCancel(w http.ResponseWriter, r *http.Request) {
	m, ok := c.webSession(w, r)
	if !ok {
		return
	}
	if !m.Session.Busy() {
		writeJSON(w, http.StatusConflict, map[string]any{"detail": "no turn is running on this session"})
		return
	}
	if err := m.Session.Interrupt(r.Context()); err != nil {
		writeJSON(w, http.StatusConflict, map[string]any{"detail": "cancel: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cancelled": true})
}

// WebOmitted says which of a live episode's turns the console no longer
// shows: turns 1 to LastTurn, in RecordFile (a name in the record
// directory) when the daemon keeps records.
type WebOmitted struct {
	Turns      int    `json:"turns"`
	LastTurn   int    `json:"last_turn"`
	RecordFile string `json:"record_file,omitempty"`
}

// RecordFile is one record file as the console lists it.
type RecordFile struct {
	Name     string  `json:"name"`
	Size     int64   `json:"size"`
	Modified float64 `json:"modified"`
}

func (c *Console) handleWebRecords(w http.ResponseWriter, r *http.Request) {
	dir := c.o.Config.RecordDir
	out := []RecordFile{}
	if dir == "" {
		writeJSON(w, http.StatusOK, map[string]any{"record_dir": "", "files": out})
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"detail": fmt.Sprintf("reading record_dir: %v", err)})
		return
	}
	for _, e := range entries {
		if !validRecordName(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		out = append(out, RecordFile{Name: e.Name(), Size: info.Size(), Modified: float64(info.ModTime().UnixNano()) / 1e9})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified > out[j].Modified })
	out = out[:min(len(out), maxRecordFiles)]
	writeJSON(w, http.StatusOK, map[string]any{"record_dir": dir, "files": out})
}

// validRecordName accepts the plain file names the recorder writes.
func validRecordName(name string) bool {
	return strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, "/\\\x00")
}

func (c *Console) handleWebRecord(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if c.o.Config.RecordDir == "" {
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": "no record_dir is configured"})
		return
	}
	if !validRecordName(name) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": fmt.Sprintf("invalid record file name %q: a .jsonl file of record_dir", name)})
		return
	}
	recs, err := readRecordFile(c.o.Config.RecordDir, name)
	var cut *wire.CutError
	switch {
	case errors.As(err, &cut):
		// A daemon killed while writing leaves the last line cut: the
		// records before it are whole.
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "records": recs, "note": cut.Error()})
		return
	case errors.Is(err, fs.ErrNotExist):
		writeJSON(w, http.StatusNotFound, map[string]any{"detail": fmt.Sprintf("no record file %q", name)})
		return
	case err != nil:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": err.Error(), "name": name, "records": recs})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "records": recs})
}

// readRecordFile reads record_dir's file name (opened through an os.Root,
// so no name leaves the directory), up to maxRecordFileBytes.
func readRecordFile(dir, name string) ([]wire.Record, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening record_dir: %w", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening record file %q: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRecordFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading record file %q: %w", name, err)
	}
	if len(b) > maxRecordFileBytes {
		return nil, fmt.Errorf("record file %q is larger than %d MiB", name, maxRecordFileBytes>>20)
	}
	recs, err := wire.ReadRecords(strings.NewReader(string(b)))
	if err != nil {
		return recs, fmt.Errorf("record file %q: %w", name, err)
	}
	return recs, nil
}

// handleWebEvents is the console's live feed: the session list, then every
// change as it happens, as server-sent events. A viewer that falls
// viewerBuffer messages or viewerBytes behind loses messages and gets a
// "dropped" message; the sessions never wait for it.
func (c *Console) handleWebEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	v, unsubscribe := c.feed.subscribe()
	defer unsubscribe()
	send := func(b []byte) error {
		rc.SetWriteDeadline(time.Now().Add(c.o.WriteTimeout))
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		return rc.Flush()
	}
	first, _ := json.Marshal(Message{Type: "sessions", Sessions: c.webSessions()})
	if send(first) != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	beat := time.NewTicker(webHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.o.Quit:
			return
		case <-beat.C:
			rc.SetWriteDeadline(time.Now().Add(c.o.WriteTimeout))
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case b := <-v.ch:
			v.received(b)
			if err := send(b); err != nil {
				return
			}
			if n := v.dropped.Swap(0); n > 0 {
				note, _ := json.Marshal(Message{Type: "dropped", Dropped: n})
				if send(note) != nil {
					return
				}
			}
		}
	}
}
