package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// modelServer starts a server whose episodes have a model gateway in front
// of the fake LLM (engine mode when engine is set).
func modelServer(t *testing.T, engine bool, recordDir string) *testServer {
	t.Helper()
	llm := fakellm.New(fakellm.Options{Engine: engine})
	url, err := llm.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { llm.Close() })
	model := config.ModelConfig{URL: url}
	if engine {
		model.Upstream = config.ModelUpstreamEngine
	}
	bin := testbin.Path(t, "testharness")
	return start(t, Options{APIToken: "api-token", Config: &config.Config{
		Name:      "model-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}, Model: model},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		RecordDir: recordDir,
	}})
}

// getExport fetches GET /episodes/ID/export with the API token.
func getExport(t *testing.T, ts *testServer, id, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.url+"/episodes/"+id+"/export", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestExportRouteDecodes runs an episode of two turns with three model
// calls through the gateway, then decodes its export from the route and
// the /ws frame: lengths and spans line up with the ids, each span in its
// call's turn; after the socket closes the export is served from
// record_dir.
func TestExportRouteDecodes(t *testing.T) {
	ts := modelServer(t, true, t.TempDir())
	hdr := http.Header{"Authorization": {"Bearer api-token"}}
	c := ts.ws(t, "/ws", hdr)
	r := roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ep-export"}}`)
	if r["type"] != "observation" {
		t.Fatalf("reset: %v", r)
	}
	for _, msg := range []string{"llm one;;llm two", "llm three"} {
		r = roundTrip(t, c, `{"type":"step","data":{"message":"`+msg+`"}}`)
		if d := data(r); d == nil || d["done"] != false || strings.Contains(r["data"].(map[string]any)["metadata"].(map[string]any)["response"].(string), "llm error") {
			t.Fatalf("step %q: %v", msg, r)
		}
	}
	if code, _ := getExport(t, ts, "ep-export", ""); code != http.StatusUnauthorized {
		t.Fatalf("without the API token: %d", code)
	}
	code, b := getExport(t, ts, "ep-export", "api-token")
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, b)
	}
	var ex gateway.Export
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	checkChain(t, &ex, []int{1, 1, 2})

	f := roundTrip(t, c, `{"type":"export"}`)
	fb, _ := json.Marshal(f["data"])
	var fromFrame gateway.Export
	if f["type"] != "export" || json.Unmarshal(fb, &fromFrame) != nil {
		t.Fatalf("export frame: %v", f)
	}
	checkChain(t, &fromFrame, []int{1, 1, 2})

	if code, b := getExport(t, ts, "no-such-episode", "api-token"); code != http.StatusNotFound {
		t.Fatalf("unknown episode: %d %s", code, b)
	}
	c.CloseNow()
	waitFor(t, "the session to end", func() bool { return ts.ActiveSessions() == 0 })
	code, b = getExport(t, ts, "ep-export", "api-token")
	var written gateway.Export
	if code != http.StatusOK || json.Unmarshal(b, &written) != nil {
		t.Fatalf("export from record_dir: %d %s", code, b)
	}
	checkChain(t, &written, []int{1, 1, 2})
}

// checkChain asserts one chain holding every call, of the given turns: the
// arrays of one length, spans partitioning the ids in order, the mask 1 and
// a logprob exactly on completion spans, and each completion span as long
// as its call's completion.
func checkChain(t *testing.T, ex *gateway.Export, turns []int) {
	t.Helper()
	if ex.Format != gateway.ExportFormat || ex.EpisodeID != "ep-export" || len(ex.Chains) != 1 || len(ex.Calls) != len(turns) {
		t.Fatalf("export %s %s: %d chains, %d calls", ex.Format, ex.EpisodeID, len(ex.Chains), len(ex.Calls))
	}
	ch := ex.Chains[0]
	if len(ch.InputIDs) == 0 || len(ch.LossMask) != len(ch.InputIDs) || len(ch.Logprobs) != len(ch.InputIDs) {
		t.Fatalf("lengths %d/%d/%d", len(ch.InputIDs), len(ch.LossMask), len(ch.Logprobs))
	}
	completions := map[int]int{}
	for i, c := range ex.Calls {
		if c.Turn != turns[i] || c.Chain != 1 {
			t.Errorf("call %+v, want turn %d in chain 1", c, turns[i])
		}
		completions[c.CallIndex] = c.CompletionTokens
	}
	at := 0
	for _, sp := range ch.Spans {
		if sp.Start != at || sp.End < sp.Start || sp.End > len(ch.InputIDs) {
			t.Fatalf("span %+v after %d", sp, at)
		}
		trained := sp.Kind == gateway.SpanCompletion
		if trained && sp.End-sp.Start != completions[sp.CallIndex] {
			t.Errorf("completion span %+v, call has %d tokens", sp, completions[sp.CallIndex])
		}
		if sp.Turn != turns[sp.CallIndex-1] {
			t.Errorf("span %+v in turn %d, its call in %d", sp, sp.Turn, turns[sp.CallIndex-1])
		}
		for i := sp.Start; i < sp.End; i++ {
			if (ch.LossMask[i] == 1) != trained || (ch.Logprobs[i] != nil) != trained {
				t.Fatalf("position %d of %+v: mask %d, logprob %v", i, sp, ch.LossMask[i], ch.Logprobs[i])
			}
		}
		at = sp.End
	}
	if at != len(ch.InputIDs) {
		t.Fatalf("spans end at %d of %d", at, len(ch.InputIDs))
	}
}

// TestExportWithoutTrainingTraffic: a passthrough episode and one without
// a model call say so (409 with a reason and a message that says which),
// never with an empty export.
func TestExportWithoutTrainingTraffic(t *testing.T) {
	for _, c := range []struct {
		engine bool
		msg    string
		reason string
		says   string
	}{
		{false, "llm hi", reasonEvaluation, "evaluation"},
		{true, "reply no model call", reasonNoTraining, "it made no model call through the gateway"},
	} {
		ts := modelServer(t, c.engine, "")
		cl := ts.ws(t, "/ws", http.Header{"Authorization": {"Bearer api-token"}})
		roundTrip(t, cl, `{"type":"reset","data":{"episode_id":"ep-none"}}`)
		roundTrip(t, cl, `{"type":"step","data":{"message":"`+c.msg+`"}}`)
		code, b := getExport(t, ts, "ep-none", "api-token")
		var body map[string]any
		json.Unmarshal(b, &body)
		if msg, _ := body["detail"].(string); code != http.StatusConflict || body["reason"] != c.reason || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %s, want 409 %s saying %q", c.msg, code, b, c.reason, c.says)
		}
		f := roundTrip(t, cl, `{"type":"export"}`)
		if f["type"] != "error" || !strings.Contains(data(f)["message"].(string), c.reason) {
			t.Errorf("%s: export frame %v", c.msg, f)
		}
	}
}

// After its connection closed, an episode without training traffic is
// still 409 with its reason (docs/gateway.md), found by its record in
// record_dir; it used to be 404 (no export file is written for it). Its
// message allows for the other cause of a record without an export file,
// a daemon that died before the episode ended. An episode with no record
// at all stays 404.
func TestExportWithoutTrainingTrafficAfterClose(t *testing.T) {
	for _, c := range []struct {
		engine bool
		msg    string
		reason string
		says   string
	}{
		{false, "llm hi", reasonEvaluation, "evaluation"},
		{true, "reply no model call", reasonNoTraining, "or its daemon stopped before it ended"},
	} {
		ts := modelServer(t, c.engine, t.TempDir())
		cl := ts.ws(t, "/ws", http.Header{"Authorization": {"Bearer api-token"}})
		roundTrip(t, cl, `{"type":"reset","data":{"episode_id":"ep/none"}}`)
		roundTrip(t, cl, `{"type":"step","data":{"message":"`+c.msg+`"}}`)
		cl.CloseNow()
		waitFor(t, "the session to end", func() bool { return ts.ActiveSessions() == 0 })
		code, b := getExport(t, ts, "ep%2Fnone", "api-token")
		var body map[string]any
		json.Unmarshal(b, &body)
		if msg, _ := body["detail"].(string); code != http.StatusConflict || body["reason"] != c.reason || !strings.Contains(msg, c.says) {
			t.Errorf("%s after close: %d %s, want 409 %s saying %q", c.msg, code, b, c.reason, c.says)
		}
		if code, b := getExport(t, ts, "ep-never", "api-token"); code != http.StatusNotFound {
			t.Errorf("unknown episode: %d %s", code, b)
		}
	}
}
