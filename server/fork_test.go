package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// TestForkConstantsAgree: the wire's bounds and mechanisms (what clients
// read) are the session's.
func TestForkConstantsAgree(t *testing.T) {
	if wire.MaxForkCount != session.MaxForkCount {
		t.Errorf("wire.MaxForkCount %d, session.MaxForkCount %d", wire.MaxForkCount, session.MaxForkCount)
	}
	want := []string{session.ForkResume, session.ForkLine, session.ForkReplay}
	if fmt.Sprint(wire.ForkMechanisms) != fmt.Sprint(want) {
		t.Errorf("wire.ForkMechanisms %v, the session's %v", wire.ForkMechanisms, want)
	}
}

// TestParseFork: a fork's count must be an integer from 1 to 64, at_turn
// an integer >= 0, mechanism one of the three; a frame names no session,
// POST /fork may; every other key is refused. Each refusal names its field.
func TestParseFork(t *testing.T) {
	for _, c := range []struct {
		in   string
		http bool
		want forkRequest
		loc  string // the refused field ("" accepted)
		msg  string // in the refusal's message
	}{
		{in: `{"count":4}`, want: forkRequest{count: 4}},
		{in: `{"count":64,"at_turn":2,"mechanism":"replay"}`, want: forkRequest{count: 64, atTurn: 2, mechanism: "replay"}},
		{in: `{"count":1,"at_turn":null,"mechanism":null}`, want: forkRequest{count: 1}},
		{in: `{"count":2,"session_id":"abc"}`, http: true, want: forkRequest{count: 2, sessionID: "abc"}},
		{in: `null`, loc: "count", msg: "Field required"},
		{in: `{}`, loc: "count", msg: "Field required"},
		{in: `{"count":0}`, loc: "count", msg: "greater than or equal to 1"},
		{in: `{"count":65}`, loc: "count", msg: "less than or equal to 64"},
		{in: `{"count":-3}`, loc: "count", msg: "greater than or equal to 1"},
		{in: `{"count":"two"}`, loc: "count", msg: "valid integer"},
		{in: `{"count":1.5}`, loc: "count", msg: "valid integer"},
		{in: `{"count":true}`, loc: "count", msg: "valid integer"},
		{in: `{"count":1e100}`, loc: "count", msg: "valid integer"},
		{in: `{"count":2,"at_turn":-1}`, loc: "at_turn", msg: "greater than or equal to 0"},
		{in: `{"count":2,"at_turn":"1"}`, loc: "at_turn", msg: "valid integer"},
		{in: `{"count":2,"mechanism":"criu"}`, loc: "mechanism", msg: "'resume', 'line', 'replay'"},
		{in: `{"count":2,"mechanism":3}`, loc: "mechanism", msg: "valid string"},
		{in: `{"count":2,"session_id":"abc"}`, loc: "session_id", msg: "connection's session"},
		{in: `{"count":2,"session_id":"a\u0000b"}`, http: true, loc: "session_id", msg: "control"},
		{in: `{"count":2,"G":4}`, loc: "G", msg: "Extra inputs"},
	} {
		got, werr := parseFork(json.RawMessage(c.in), c.http)
		if c.loc == "" {
			if werr != nil || got != c.want {
				t.Errorf("%s: %+v %v, want %+v", c.in, got, werr, c.want)
			}
			continue
		}
		if c.in == "null" {
			got, werr = parseFork(nil, c.http)
		}
		if werr == nil || werr.Code != codeValidation || len(werr.Errors) == 0 {
			t.Errorf("%s: accepted (%+v), want a refusal of %s", c.in, got, c.loc)
			continue
		}
		e := werr.Errors[0]
		if fmt.Sprint(e.Loc) != "["+c.loc+"]" || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%s: refused at %v with %q, want %s and %q", c.in, e.Loc, e.Msg, c.loc, c.msg)
		}
	}
}

// metricValue reads one sample of /metrics ("" when absent).
func metricValue(t testing.TB, ts *testServer, token, sample string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.url+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// wsSessionID is the id of the session of the only /ws connection.
func wsSessionID(t *testing.T, ts *testServer) string {
	t.Helper()
	for _, m := range ts.reg.list() {
		if m.kind == kindWS {
			return m.id
		}
	}
	t.Fatal("no /ws session")
	return ""
}

// post sends a JSON body without a token and decodes the answer.
func post(t testing.TB, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// TestForkRefusalsKeepTheConnection: over /ws, a fork with a bad count, an
// at_turn past the current turn or an unknown mechanism is a
// VALIDATION_ERROR naming it; one while a turn runs (started over HTTP on
// the same session) is BUSY and the turn finishes unaffected; one that
// needs more session slots than are free is CAPACITY_REACHED and makes no
// sibling (the slots are reserved all at once or not at all); before any
// reset it says so. After each the connection steps on. POST /fork answers
// the same refusals with 422, 409 and 503, and the metrics count the
// refused and failed forks.
func TestForkRefusalsKeepTheConnection(t *testing.T) {
	ts := start(t, Options{MaxSessions: 3})
	c := ts.ws(t, "/ws", nil)
	if r := roundTrip(t, c, `{"type":"fork","data":{"count":2}}`); r["type"] != "error" || !strings.Contains(fmt.Sprint(data(r)["message"]), "reset first") {
		t.Errorf("a fork before any reset: %v", r)
	}
	if r := roundTrip(t, c, `{"type":"reset"}`); r["type"] != "observation" {
		t.Fatalf("reset: %v", r)
	}
	if r := roundTrip(t, c, `{"type":"step","data":{"message":"reply one"}}`); r["type"] != "observation" {
		t.Fatalf("step: %v", r)
	}
	steps := 1
	stepOn := func(after string) {
		t.Helper()
		steps++
		r := roundTrip(t, c, `{"type":"step","data":{"message":"count"}}`)
		md, _ := data(r)["observation"].(map[string]any)
		md, _ = md["metadata"].(map[string]any)
		if r["type"] != "observation" || md["turn_number"] != float64(steps) {
			t.Fatalf("after %s the connection does not step on: %v", after, r)
		}
	}
	for _, bad := range []struct{ frame, loc, msg string }{
		{`{"type":"fork","data":{"count":0}}`, "count", "greater than or equal to 1"},
		{`{"type":"fork","data":{"count":65}}`, "count", "less than or equal to 64"},
		{`{"type":"fork","data":{"count":"four"}}`, "count", "valid integer"},
		{`{"type":"fork","data":{"at_turn":1}}`, "count", "Field required"},
		{`{"type":"fork","data":{"count":1,"at_turn":7}}`, "at_turn", "at_turn 7 is past episode"},
		{`{"type":"fork","data":{"count":1,"mechanism":"criu"}}`, "mechanism", "'replay'"},
	} {
		r := roundTrip(t, c, bad.frame)
		d := data(r)
		errs, _ := d["errors"].([]any)
		var first map[string]any
		if len(errs) > 0 {
			first, _ = errs[0].(map[string]any)
		}
		if r["type"] != "error" || d["code"] != codeValidation || fmt.Sprint(first["loc"]) != "["+bad.loc+"]" ||
			!strings.Contains(fmt.Sprint(first["msg"]), bad.msg) {
			t.Errorf("%s: %v, want a VALIDATION_ERROR of %s saying %q", bad.frame, r, bad.loc, bad.msg)
		}
		stepOn(bad.frame)
	}
	if r := roundTrip(t, c, `{"type":"fork","data":{"count":1,"at_turn":9}}`); !strings.Contains(fmt.Sprint(data(r)["message"]), "current turn "+strconv.Itoa(steps)) {
		t.Errorf("the at_turn refusal does not name the current turn %d: %v", steps, r)
	}

	// Capacity: 1 of 3 slots is used; a fork of 3 needs 3.
	r := roundTrip(t, c, `{"type":"fork","data":{"count":3}}`)
	if d := data(r); r["type"] != "error" || d["code"] != codeCapacity || d["active_sessions"] != 1.0 || d["max_sessions"] != 3.0 ||
		!strings.Contains(fmt.Sprint(d["message"]), "a fork of 3 siblings needs 3 free session slots") {
		t.Errorf("a fork past capacity: %v", r)
	}
	if n := ts.reg.count(); n != 1 {
		t.Errorf("after a refused fork %d sessions and reservations, want 1", n)
	}
	stepOn("a fork past capacity")
	id := wsSessionID(t, ts)
	if code, v := post(t, ts.url+"/fork", `{"session_id":"`+id+`","count":3}`); code != http.StatusServiceUnavailable || v["max_sessions"] != 3.0 {
		t.Errorf("POST /fork past capacity: %d %v", code, v)
	}
	if code, v := post(t, ts.url+"/fork", `{"session_id":"`+id+`","count":65}`); code != http.StatusUnprocessableEntity {
		t.Errorf("POST /fork of 65: %d %v", code, v)
	}
	if code, v := post(t, ts.url+"/fork", `{"session_id":"no-such-session","count":1}`); code != http.StatusNotFound {
		t.Errorf("POST /fork of an unknown session: %d %v", code, v)
	}
	if code, v := post(t, ts.url+"/fork", `{"session_id":"`+id+`","count":1,"at_turn":99}`); code != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(v["detail"]), "at_turn 99") {
		t.Errorf("POST /fork at turn 99: %d %v", code, v)
	}

	// Busy: a turn started over HTTP on the /ws session holds until a file
	// exists; a fork frame meanwhile is BUSY; the turn then ends normally.
	gate := filepath.Join(t.TempDir(), "gate")
	type answer struct {
		code int
		obs  map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(ts.url+"/step", "application/json", strings.NewReader(`{"session_id":"`+id+`","action":{"message":"waitfor `+gate+`;;reply held turn done"}}`))
		if err != nil {
			done <- answer{}
			return
		}
		defer resp.Body.Close()
		var obs map[string]any
		json.NewDecoder(resp.Body).Decode(&obs)
		done <- answer{resp.StatusCode, obs}
	}()
	m := ts.reg.get(id)
	waitFor(t, "the held turn to run", m.sess.Busy)
	if r := roundTrip(t, c, `{"type":"fork","data":{"count":1}}`); r["type"] != "error" || data(r)["code"] != codeBusy ||
		!strings.Contains(fmt.Sprint(data(r)["message"]), "between turns") {
		t.Errorf("a fork during a turn: %v", r)
	}
	if code, v := post(t, ts.url+"/fork", `{"session_id":"`+id+`","count":1}`); code != http.StatusConflict || v["code"] != codeBusy {
		t.Errorf("POST /fork during a turn: %d %v", code, v)
	}
	// A reset or a step meanwhile is BUSY too (it was EXECUTION_ERROR,
	// which a client could not tell from "no episode").
	for path, body := range map[string]string{"/reset": `{"session_id":"` + id + `"}`, "/step": `{"session_id":"` + id + `","action":{"message":"hi"}}`} {
		if code, v := post(t, ts.url+path, body); code != http.StatusConflict || v["code"] != codeBusy || !strings.Contains(fmt.Sprint(v["detail"]), "busy") {
			t.Errorf("POST %s during a turn: %d %v", path, code, v)
		}
	}
	if r := roundTrip(t, c, `{"type":"step","data":{"message":"hi"}}`); r["type"] != "error" || data(r)["code"] != codeBusy {
		t.Errorf("a step frame during a turn: %v", r)
	}
	if !m.sess.Busy() {
		t.Error("the fork ended the running turn")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-done
	md, _ := a.obs["observation"].(map[string]any)
	md, _ = md["metadata"].(map[string]any)
	if a.code != http.StatusOK || md["response"] != "held turn done" || md["error_type"] != nil {
		t.Errorf("the held turn after the refused forks: %d %v", a.code, a.obs)
	}
	steps++
	stepOn("a fork during a turn")

	for sample, want := range map[string]string{
		`harnessd_forks_total{mechanism="auto",outcome="refused"}`: "2",
		`harnessd_forks_total{mechanism="auto",outcome="failed"}`:  "2",
		`harnessd_forks_total{mechanism="auto",outcome="ok"}`:      "0",
		`harnessd_sessions_open{kind="fork"}`:                      "0",
		`harnessd_fork_seconds_count`:                              "0",
	} {
		if got := metricValue(t, ts, "", sample); got != want {
			t.Errorf("%s = %q, want %q", sample, got, want)
		}
	}
}

// forkServer runs the test agent with record files, room for a parent and
// its siblings.
func forkServer(t testing.TB, max int) *testServer {
	t.Helper()
	bin := testbin.Path(t, "testharness")
	cfg := &config.Config{
		Name:      "fork-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		RecordDir: t.TempDir(),
	}
	return start(t, Options{Config: cfg, MaxSessions: max, IdleTimeout: time.Hour})
}

// turnOf is an observation's turn number and response.
func turnOf(obs *wire.Observation) string {
	resp := "<none>"
	if obs.Metadata.Response != nil {
		resp = *obs.Metadata.Response
	}
	return fmt.Sprintf("turn %d: %s", obs.Metadata.TurnNumber, resp)
}

// TestForkSiblingsAreSessions forks a live episode after two turns over
// /ws with the Go client and checks every surface of a sibling: the reply
// names the parent and two ready siblings with their episodes and
// mechanism; one sibling, attached by a new /ws connection, steps its turn
// 3 and remembers the parent's turns; the other steps over HTTP POST /step
// with its session_id and reads GET /state; a second attach to an attached
// sibling is refused; a dropped connection leaves its sibling for a later
// attach, a close frame ends it; the parent goes on at its own turn 3;
// POST /fork forks too; the metrics count the fork, its siblings and their
// sessions; the console's API lists the siblings under their parent and
// links both ways.
func TestForkSiblingsAreSessions(t *testing.T) {
	ts := forkServer(t, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	parent, err := client.Dial(ctx, ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	if _, err := parent.Reset(ctx, client.ResetOptions{EpisodeID: "parent-ep"}); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"reply first", "reply second"} {
		if _, err := parent.Step(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	// A console viewer watches the live feed throughout: the siblings'
	// sessions report their episodes (and, by replay, turns) before the
	// server registers them.
	feed := watchFeed(t, ts)
	sibs, err := parent.Fork(ctx, client.ForkOptions{Count: 2})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	parentID := parent.SessionID()
	if parentID == "" || ts.reg.get(parentID) == nil {
		t.Fatalf("the fork names parent session %q, which the server does not hold", parentID)
	}
	if len(sibs) != 2 {
		t.Fatalf("%d siblings, want 2: %+v", len(sibs), sibs)
	}
	for i, s := range sibs {
		if s.Err != nil || s.SessionID == "" || s.EpisodeID == "" || s.EpisodeID == "parent-ep" || !knownMechanism(s.Mechanism) {
			t.Fatalf("sibling %d: %+v", i, s)
		}
		m := ts.reg.get(s.SessionID)
		if m == nil || m.kind != kindFork {
			t.Fatalf("sibling %d's session %s is not registered as a fork's", i, s.SessionID)
		}
		if pid, pep, at := m.sess.ForkedFrom(); pid != parentID || pep != "parent-ep" || at != 2 {
			t.Errorf("sibling %d ForkedFrom() = %s %s %d", i, pid, pep, at)
		}
	}

	// Sibling 0 over an attached /ws connection.
	a, err := parent.AttachSibling(ctx, sibs[0])
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	obs, err := a.Step(ctx, "history")
	if err != nil {
		t.Fatal(err)
	}
	if got := turnOf(obs); got != "turn 3: history: reply first | reply second | history" {
		t.Errorf("sibling 0's first turn: %q (want its turn 3 to remember the parent's turns)", got)
	}
	if _, err := client.Attach(ctx, ts.url, sibs[0].SessionID, nil); err == nil || !strings.Contains(err.Error(), "already attached") {
		t.Errorf("a second attach to an attached sibling: %v", err)
	}

	// Sibling 1 over HTTP.
	code, v := post(t, ts.url+"/step", `{"session_id":"`+sibs[1].SessionID+`","action":{"message":"count"}}`)
	md, _ := v["observation"].(map[string]any)
	md, _ = md["metadata"].(map[string]any)
	if code != http.StatusOK || md["turn_number"] != 3.0 || md["response"] != "turns: 3" || md["episode_id"] != sibs[1].EpisodeID {
		t.Errorf("sibling 1's HTTP step: %d %v", code, v)
	}
	code, st := getJSON(t, ts.url+"/state?session_id="+sibs[1].SessionID)
	if code != http.StatusOK || st["episode_id"] != sibs[1].EpisodeID || st["step_count"] != 3.0 {
		t.Errorf("sibling 1's HTTP state: %d %v", code, st)
	}

	// The parent goes on at its own turn 3.
	obs, err = parent.Step(ctx, "history")
	if err != nil {
		t.Fatal(err)
	}
	if got := turnOf(obs); got != "turn 3: history: reply first | reply second | history" {
		t.Errorf("the parent after the fork: %q", got)
	}

	// A dropped connection leaves sibling 0; a close frame ends it.
	a.Close()
	raw, _, err := websocket.Dial(ctx, strings.Replace(ts.url, "http", "ws", 1)+"/ws?session_id="+sibs[1].SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := roundTrip(t, raw, `{"type":"state"}`); data(r)["episode_id"] != sibs[1].EpisodeID {
		t.Errorf("a raw attach to sibling 1: %v", r)
	}
	raw.CloseNow()
	waitFor(t, "the dropped sibling to be free", func() bool { m := ts.reg.get(sibs[1].SessionID); return m != nil && !m.attached.Load() })
	a, err = client.Attach(ctx, ts.url, sibs[1].SessionID, nil)
	if err != nil {
		t.Fatalf("re-attach after a drop: %v", err)
	}
	if obs, err := a.Step(ctx, "count"); err != nil || turnOf(obs) != "turn 4: turns: 4" {
		t.Errorf("sibling 1 after re-attaching: %v %v", obs, err)
	}
	if ts.reg.get(sibs[0].SessionID) != nil {
		t.Error("closing sibling 0's connection (a close frame) did not end its session")
	}

	// POST /fork forks the parent again (it has played 3 turns).
	code, v = post(t, ts.url+"/fork", `{"session_id":"`+parentID+`","count":1,"at_turn":3}`)
	list, _ := v["siblings"].([]any)
	if code != http.StatusOK || v["parent_session_id"] != parentID || v["parent_episode_id"] != "parent-ep" || v["at_turn"] != 3.0 || len(list) != 1 {
		t.Fatalf("POST /fork: %d %v", code, v)
	}
	third, _ := list[0].(map[string]any)
	if third["session_id"] == nil || third["error"] != nil {
		t.Errorf("POST /fork's sibling: %v", third)
	}

	// Sibling 0's session ends after its slot is free (stopping its
	// harness): its gauge follows.
	waitFor(t, "sibling 0's session to be counted closed", func() bool { return metricValue(t, ts, "", `harnessd_sessions_open{kind="fork"}`) == "2" })
	if got := metricValue(t, ts, "", `harnessd_fork_seconds_count`); got != "2" {
		t.Errorf("harnessd_fork_seconds_count = %q, want 2", got)
	}
	var okForks, okSiblings float64
	for _, mech := range wire.ForkMechanisms {
		f, _ := strconv.ParseFloat(metricValue(t, ts, "", `harnessd_forks_total{mechanism="`+mech+`",outcome="ok"}`), 64)
		s, _ := strconv.ParseFloat(metricValue(t, ts, "", `harnessd_fork_siblings_total{mechanism="`+mech+`",outcome="ok"}`), 64)
		okForks, okSiblings = okForks+f, okSiblings+s
	}
	if okForks != 2 || okSiblings != 3 {
		t.Errorf("the metrics count %v ok forks and %v ok siblings, want 2 and 3", okForks, okSiblings)
	}

	// The console: the siblings right under their parent, linked both ways.
	var eps struct {
		Episodes []struct {
			ID         string           `json:"id"`
			Depth      int              `json:"depth"`
			Forks      int              `json:"forks"`
			ForkedFrom *wire.ForkOrigin `json:"forked_from"`
		} `json:"episodes"`
	}
	webGet(t, ts.url+"/web/api/episodes?sort=id", "", &eps)
	var order []string
	for _, e := range eps.Episodes {
		order = append(order, fmt.Sprintf("%s/%d/%d", e.ID, e.Depth, e.Forks))
		if e.ForkedFrom != nil && (e.ForkedFrom.ParentEpisodeID != "parent-ep" || e.ForkedFrom.ParentSessionID != parentID) {
			t.Errorf("episode %s forked from %+v", e.ID, e.ForkedFrom)
		}
	}
	if len(order) != 4 || order[0] != "parent-ep/0/3" || !strings.HasSuffix(order[1], "/1/0") || !strings.HasSuffix(order[3], "/1/0") {
		t.Errorf("the episodes index lists %v, want parent-ep (3 forks) first and its 3 siblings at depth 1 under it", order)
	}
	var page struct {
		ForkedFrom *wire.ForkOrigin `json:"forked_from"`
		Forks      []struct {
			EpisodeID string `json:"episode_id"`
			AtTurn    int    `json:"at_turn"`
			Live      bool   `json:"live"`
		} `json:"forks"`
	}
	webGet(t, ts.url+"/web/api/episodes/"+sibs[1].EpisodeID, "", &page)
	if o := page.ForkedFrom; o == nil || o.ParentEpisodeID != "parent-ep" || o.AtTurn != 2 || o.Mechanism != sibs[1].Mechanism {
		t.Errorf("sibling 1's episode page: forked from %+v", o)
	}
	webGet(t, ts.url+"/web/api/episodes/parent-ep", "", &page)
	if len(page.Forks) != 3 || page.Forks[0].EpisodeID != sibs[0].EpisodeID || page.Forks[0].AtTurn != 2 || page.Forks[2].AtTurn != 3 || !page.Forks[1].Live {
		t.Errorf("the parent's episode page lists its forks as %+v", page.Forks)
	}

	// The feed told the viewer of each sibling's session and its origin.
	for _, sib := range sibs {
		want := `"session":{"id":"` + sib.SessionID + `"`
		waitFor(t, "the feed to show sibling "+sib.SessionID, func() bool {
			for _, line := range feed() {
				if strings.Contains(line, want) && strings.Contains(line, `"forked_from":{"parent_session_id":"`+parentID+`"`) {
					return true
				}
			}
			return false
		})
	}

	// A close frame ends an attached sibling (sibling 1 now).
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the closed sibling to end", func() bool { return ts.reg.get(sibs[1].SessionID) == nil })
	waitFor(t, "one fork session to stay open", func() bool { return metricValue(t, ts, "", `harnessd_sessions_open{kind="fork"}`) == "1" })
}

// TestForkReservesEverySlot: a fork of G needs G free slots at once; with
// exactly G free it succeeds and takes them all (a new connection is then
// refused), and closing one sibling over HTTP frees one.
func TestForkReservesEverySlot(t *testing.T) {
	ts := forkServer(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	parent, err := client.Dial(ctx, ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	if _, err := parent.Reset(ctx, client.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := parent.Step(ctx, "reply one"); err != nil {
		t.Fatal(err)
	}
	if _, err := parent.Fork(ctx, client.ForkOptions{Count: 3}); err == nil || !strings.Contains(err.Error(), "CAPACITY_REACHED") {
		t.Fatalf("a fork of 3 with 2 free slots: %v", err)
	}
	sibs, err := parent.Fork(ctx, client.ForkOptions{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ts.reg.count() != 3 {
		t.Errorf("%d sessions after the fork, want 3", ts.reg.count())
	}
	other, err := client.Dial(ctx, ts.url, nil)
	if err == nil {
		_, err = other.Reset(ctx, client.ResetOptions{})
		other.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "CAPACITY_REACHED") {
		t.Errorf("a new session with every slot taken by the fork: %v", err)
	}
	if code, v := post(t, ts.url+"/close", `{"session_id":"`+sibs[0].SessionID+`"}`); code != http.StatusOK || v["closed"] != true {
		t.Fatalf("closing a sibling: %d %v", code, v)
	}
	if ts.reg.count() != 2 {
		t.Errorf("%d sessions after closing a sibling, want 2", ts.reg.count())
	}
}

// watchFeed reads the console's live feed until the test ends and returns
// what it has read so far.
func watchFeed(t *testing.T, ts *testServer) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url+"/web/api/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); res.Body.Close(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// TestForkRouteIsGuarded: POST /fork is an orchestration route like
// /step: it needs the API token, and a harness's process tree is refused
// even with it (the test process, with the token, reaches the route: no
// episode yet, 409). In production mode there is no route, and the /ws
// frame is refused.
func TestForkRouteIsGuarded(t *testing.T) {
	ts := start(t, Options{APIToken: "fork-token"})
	if code, _ := post(t, ts.url+"/fork", `{"count":1}`); code != http.StatusUnauthorized {
		t.Errorf("POST /fork without the token: %d, want 401", code)
	}
	req, _ := http.NewRequest("POST", ts.url+"/fork", strings.NewReader(`{"count":1}`))
	req.Header.Set("Authorization", "Bearer fork-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("POST /fork with the token and no episode: %d, want 409", resp.StatusCode)
	}
	prod := start(t, Options{Mode: Production})
	if code, _ := post(t, prod.url+"/fork", `{"count":1}`); code != http.StatusNotFound {
		t.Errorf("POST /fork in production mode: %d, want 404", code)
	}
	c := prod.ws(t, "/ws", nil)
	if r := roundTrip(t, c, `{"type":"fork","data":{"count":1}}`); r["type"] != "error" || !strings.Contains(fmt.Sprint(data(r)["message"]), "simulation mode only") {
		t.Errorf("a fork frame in production mode: %v", r)
	}

	if m := ts.sup.Mechanisms(); m.PeerCheck == process.PeerCheckCgroup {
		// With the token: the peer check refuses it all the same.
		body := `{"count":1}`
		got := requestFromTree(t, ts, "REQUEST", "POST", "/fork?token=fork-token", body)
		if got != "HTTP/1.1 403 Forbidden" {
			t.Errorf("a harness tree's POST /fork with the token: %q, want 403", got)
		}
	} else {
		testbin.Missing(t, "peer check by cgroup unavailable: %v", m.Notes)
	}
}
