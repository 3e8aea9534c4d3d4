package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/server/console"
	"github.com/harnessd/harnessd/wire"
)

func webServer(t *testing.T, token string) (*testServer, string) {
	t.Helper()
	bin := testbin.Path(t, "testharness")
	records := t.TempDir()
	cfg := &config.Config{
		Name:      "web-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Tools:     []config.ToolConfig{{Name: "calc", Command: []string{bin, "tools"}}},
		Rubrics:   []rubric.Spec{{Name: "says-five", Type: "match", Pattern: `\b5\b`}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		RecordDir: records,
	}
	return start(t, Options{Config: cfg, APIToken: token, MaxSessions: 2}), records
}

func webGet(t *testing.T, url, token string, into any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if into != nil && res.StatusCode == http.StatusOK {
		if err := json.NewDecoder(res.Body).Decode(into); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return res.StatusCode
}

// TestWebAPI checks the console's page, its token, and the JSON API over a
// real episode: the session list, the episode's records, the record files.
func TestWebAPI(t *testing.T) {
	ts, _ := webServer(t, "tok")
	for _, path := range []string{"/web", "/web/api/sessions", "/web/api/records", "/web/api/events"} {
		if code := webGet(t, ts.url+path, "", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", path, code)
		}
	}
	if code := webGet(t, ts.url+"/web?token=tok", "", nil); code != http.StatusOK {
		t.Errorf("GET /web?token=: %d", code)
	}
	res, err := http.Get(ts.url + "/web/assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("console.js: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}

	c := ts.ws(t, "/ws", http.Header{"Authorization": {"Bearer tok"}})
	if f := roundTrip(t, c, `{"type":"reset","data":{}}`); f["type"] != "observation" {
		t.Fatalf("reset: %v", f)
	}
	if f := roundTrip(t, c, `{"type":"step","data":{"message":"tool add {\"a\":2,\"b\":3}"}}`); f["type"] != "observation" {
		t.Fatalf("step: %v", f)
	}
	var list struct{ Sessions []console.SessionSummary }
	webGet(t, ts.url+"/web/api/sessions", "tok", &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("sessions: %+v", list)
	}
	s := list.Sessions[0]
	if s.State != "active" || s.Turns != 1 || s.LastReward == nil || *s.LastReward != 1 || s.Isolation == "" {
		t.Errorf("session summary: %+v", s)
	}
	var ep struct{ Records []wire.Record }
	if code := webGet(t, ts.url+"/web/api/sessions/"+s.ID+"/episode", "tok", &ep); code != http.StatusOK {
		t.Fatalf("episode: %d", code)
	}
	var kinds []string
	tools := 0
	for _, r := range ep.Records {
		if len(kinds) == 0 || kinds[len(kinds)-1] != r.Kind {
			kinds = append(kinds, r.Kind)
		}
		if r.Kind == wire.RecordEvent && r.Event.Type == wire.EventToolCall && r.Event.Origin == wire.OriginBridge {
			tools++
		}
	}
	if got := strings.Join(kinds, ","); got != "reset,observation,message,event,observation" || tools != 1 {
		t.Errorf("episode records %s with %d bridge tool calls", got, tools)
	}
	if code := webGet(t, ts.url+"/web/api/sessions/nope/episode", "tok", nil); code != http.StatusNotFound {
		t.Errorf("unknown session: %d", code)
	}

	var files struct{ Files []console.RecordFile }
	webGet(t, ts.url+"/web/api/records", "tok", &files)
	if len(files.Files) != 1 {
		t.Fatalf("record files: %+v", files)
	}
	var rec struct{ Records []wire.Record }
	if code := webGet(t, ts.url+"/web/api/records/"+files.Files[0].Name, "tok", &rec); code != http.StatusOK || len(rec.Records) < 4 || rec.Records[0].Kind != wire.RecordReset {
		t.Errorf("record file: %d %d records", code, len(rec.Records))
	}
	for name, want := range map[string]int{"x.txt": 400, ".hidden.jsonl": 400, "missing.jsonl": 404, "..%2Fescape.jsonl": 400} {
		if code := webGet(t, ts.url+"/web/api/records/"+name, "tok", nil); code != want {
			t.Errorf("record %q: %d, want %d", name, code, want)
		}
	}
}

// TestWebProductionAbsent checks that production mode has no console.
func TestWebProductionAbsent(t *testing.T) {
	ts := start(t, Options{Mode: Production})
	for _, path := range []string{"/web", "/web/api/sessions", "/web/api/events", "/web/assets/console.js", "/web/episodes", "/web/api/episodes", "/web/api/overview"} {
		if code := webGet(t, ts.url+path, "", nil); code != http.StatusNotFound {
			t.Errorf("production GET %s: %d, want 404", path, code)
		}
	}
}

// TestWebEvents reads the live feed while an episode runs: the session
// list first, then the episode's records as they happen.
func TestWebEvents(t *testing.T) {
	ts, _ := webServer(t, "tok")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url+"/web/api/events?token=tok", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events: %d %q", res.StatusCode, ct)
	}
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(nil, 1<<20)
	next := func() console.Message {
		t.Helper()
		for lines.Scan() {
			if b, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var m console.Message
				if err := json.Unmarshal([]byte(b), &m); err != nil {
					t.Fatalf("feed message %q: %v", b, err)
				}
				return m
			}
		}
		t.Fatalf("feed ended: %v", lines.Err())
		return console.Message{}
	}
	if m := next(); m.Type != "sessions" || len(m.Sessions) != 0 {
		t.Fatalf("first message: %+v", m)
	}
	c := ts.ws(t, "/ws", http.Header{"Authorization": {"Bearer tok"}})
	roundTrip(t, c, `{"type":"reset","data":{}}`)
	roundTrip(t, c, `{"type":"step","data":{"message":"reply <b>hi</b>"}}`)
	var seen []string
	for len(seen) == 0 || seen[len(seen)-1] != "observation:1" {
		m := next()
		if m.Type == "record" {
			seen = append(seen, m.Record.Kind+":"+map[bool]string{true: "1", false: "0"}[m.Record.Turn == 1 ||
				(m.Record.Event != nil && m.Record.Event.Turn == 1)])
			if m.Record.Event != nil && m.Record.Event.Type == wire.EventTextOutput {
				if txt := m.Record.Event.Data.(*wire.TextOutput).Text; txt != "<b>hi</b>" {
					t.Errorf("text event %q", txt)
				}
			}
		}
	}
	if got := strings.Join(seen[:4], ","); got != "reset:0,observation:0,message:1,event:1" {
		t.Errorf("feed records %v", seen)
	}
}

// TestWebPagesBehindToken: the console's new pages and APIs (episodes,
// one episode, overview) answer 401 without the API token and 200 with it,
// and the pages carry the Content-Security-Policy.
func TestWebPagesBehindToken(t *testing.T) {
	ts, records := webServer(t, "tok")
	fakeEpisode{id: "e-1", task: "t", started: 1.7e9, turns: 1, turnSeconds: 1, reward: ptr(1.0), done: true, message: "m"}.write(t, records)
	paths := []string{"/web/episodes", "/web/episodes/e-1", "/web/overview", "/web/api/episodes", "/web/api/episodes/e-1", "/web/api/overview"}
	for _, path := range paths {
		if code := webGet(t, ts.url+path, "", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", path, code)
		}
		if code := webGet(t, ts.url+path, "wrong", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", path, code)
		}
		req, _ := http.NewRequest(http.MethodGet, ts.url+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the token: %d", path, res.StatusCode)
		}
		if !strings.HasPrefix(path, "/web/api/") && !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, res.Header.Get("Content-Security-Policy"))
		}
	}
	var list struct {
		Total    int
		Episodes []console.EpisodeSummary
	}
	webGet(t, ts.url+"/web/api/episodes?task=t", "tok", &list)
	if list.Total != 1 || list.Episodes[0].ID != "e-1" || list.Episodes[0].Status != "done" {
		t.Errorf("episodes: %+v", list)
	}
	for _, q := range []string{"sort=nope", "reward_min=x", "offset=-1"} {
		if code := webGet(t, ts.url+"/web/api/episodes?"+q, "tok", nil); code != http.StatusBadRequest {
			t.Errorf("episodes?%s: %d, want 400", q, code)
		}
	}
	if code := webGet(t, ts.url+"/web/api/episodes/nope", "tok", nil); code != http.StatusNotFound {
		t.Errorf("an unknown episode: %d, want 404", code)
	}
}
