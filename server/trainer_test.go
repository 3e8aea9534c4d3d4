package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// heldEngine is the fake LLM in engine mode behind a handler that holds
// the first chat completions request until release is closed; arrived is
// closed when it is held.
type heldEngine struct {
	llm     *fakellm.Server
	url     string
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func startHeldEngine(t *testing.T) *heldEngine {
	t.Helper()
	e := &heldEngine{llm: fakellm.New(fakellm.Options{Engine: true}), arrived: make(chan struct{}), release: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held := false
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			e.once.Do(func() { held = true })
		}
		if held {
			close(e.arrived)
			select {
			case <-e.release:
			case <-r.Context().Done():
				return
			}
		}
		e.llm.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); e.llm.Close() })
	e.url = "http://" + ln.Addr().String()
	return e
}

// call makes an HTTP request with the API token and decodes the answer.
func call(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer api-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// TestPolicyVersionAndSamplingOverTheWire: a reset pins the sampling and
// sets the session's policy version; the daemon's version changes over
// HTTP while the episode's model call is held at the engine; the export
// (route and /ws frame) says the call was sent under the session's version
// and answered under the daemon's new one, straddling the update, and
// sampled exactly as pinned, which is what the engine received. The
// routes, frame and metrics say the same.
func TestPolicyVersionAndSamplingOverTheWire(t *testing.T) {
	eng := startHeldEngine(t)
	bin := testbin.Path(t, "testharness")
	temp := 0.5
	ts := start(t, Options{APIToken: "api-token", Config: &config.Config{
		Name: "policy-env",
		Harness: config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)},
			Model: config.ModelConfig{URL: eng.url, Upstream: config.ModelUpstreamEngine, Sampling: &gateway.Sampling{Temperature: &temp}}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
	}})
	c := ts.ws(t, "/ws", http.Header{"Authorization": {"Bearer api-token"}})

	if r := roundTrip(t, c, `{"type":"reset","data":{"sampling":{"top_p":2}}}`); data(r)["code"] != codeValidation {
		t.Fatalf("a reset with a bad pin: %v", r)
	}
	r := roundTrip(t, c, `{"type":"reset","data":{"episode_id":"ep-pv","policy_version":2,"sampling":{"seed":3,"max_tokens":64}}}`)
	if r["type"] != "observation" {
		t.Fatalf("reset: %v", r)
	}
	if r := roundTrip(t, c, `{"type":"policy_version"}`); r["type"] != "policy_version" || data(r)["version"] != 2.0 || data(r)["scope"] != "session" {
		t.Fatalf("policy_version frame: %v", r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"step","data":{"message":"llm hello"}}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-eng.arrived:
	case <-ctx.Done():
		t.Fatal("the model call never reached the engine")
	}
	if code, v := call(t, "POST", ts.url+"/policy_version", `{"version":5}`); code != 200 || v["version"] != 5.0 || v["scope"] != "daemon" {
		t.Fatalf("POST /policy_version: %d %v", code, v)
	}
	close(eng.release)
	if r := read(t, c, ctx); r["type"] != "observation" {
		t.Fatalf("step: %v", r)
	}

	f := roundTrip(t, c, `{"type":"export"}`)
	b, _ := json.Marshal(f["data"])
	var ex gateway.Export
	if f["type"] != "export" || json.Unmarshal(b, &ex) != nil || len(ex.Calls) != 1 {
		t.Fatalf("export frame: %v", f)
	}
	cl := ex.Calls[0]
	if cl.PolicyVersionSent != 2 || cl.PolicyVersion != 5 || !cl.StraddlesUpdate {
		t.Errorf("call: sent under %d, answered under %d, straddles %v; want 2, 5, true", cl.PolicyVersionSent, cl.PolicyVersion, cl.StraddlesUpdate)
	}
	if !cl.SamplingPinned || len(cl.SamplingDiffers) != 0 || ex.PinnedSampling == nil || string(ex.PinnedSampling.Pinned()) != `{"max_tokens":64,"seed":3,"temperature":0.5}` {
		t.Errorf("export: pinned %v, differs %v, pin %s", cl.SamplingPinned, cl.SamplingDiffers, ex.PinnedSampling.Pinned())
	}
	var sent map[string]json.RawMessage
	reqs := eng.llm.Requests()
	if len(reqs) != 1 || json.Unmarshal(reqs[0].Body, &sent) != nil {
		t.Fatalf("engine requests: %d", len(reqs))
	}
	if string(sent["temperature"]) != "0.5" || string(sent["seed"]) != "3" || string(sent["max_tokens"]) != "64" {
		t.Errorf("the engine got temperature %s, seed %s, max_tokens %s", sent["temperature"], sent["seed"], sent["max_tokens"])
	}

	// A session's version by episode, read back; the daemon's unchanged.
	code, v := call(t, "POST", ts.url+"/policy_version", `{"version":7,"episode_id":"ep-pv"}`)
	sid, _ := v["session_id"].(string)
	if code != 200 || v["scope"] != "session" || sid == "" || v["episode_id"] != "ep-pv" {
		t.Fatalf("POST by episode: %d %v", code, v)
	}
	if code, v := call(t, "GET", ts.url+"/policy_version?session_id="+sid, ""); code != 200 || v["version"] != 7.0 || v["episode_id"] != "ep-pv" {
		t.Errorf("GET by session: %d %v", code, v)
	}
	if code, v := call(t, "GET", ts.url+"/policy_version?episode_id=ep-pv", ""); code != 200 || v["version"] != 7.0 {
		t.Errorf("GET by episode: %d %v", code, v)
	}
	if code, v := call(t, "GET", ts.url+"/policy_version", ""); code != 200 || v["version"] != 5.0 || v["scope"] != "daemon" {
		t.Errorf("GET: %d %v", code, v)
	}
	for _, bad := range []struct {
		body string
		code int
	}{{`{"version":-1}`, 422}, {`{}`, 422}, {`{"version":1,"bogus":1}`, 422}, {`{"version":1,"episode_id":"nobody"}`, 404}} {
		if code, v := call(t, "POST", ts.url+"/policy_version", bad.body); code != bad.code {
			t.Errorf("POST %s: %d %v, want %d", bad.body, code, v, bad.code)
		}
	}
	if r := roundTrip(t, c, `{"type":"policy_version","data":{"version":"x"}}`); data(r)["code"] != codeValidation {
		t.Errorf("a bad frame: %v", r)
	}
	if r := roundTrip(t, c, `{"type":"policy_version","data":{"version":9,"scope":"daemon"}}`); data(r)["version"] != 9.0 || data(r)["scope"] != "daemon" {
		t.Errorf("a daemon frame: %v", r)
	}
	if code, v := call(t, "GET", ts.url+"/policy_version?episode_id=ep-pv", ""); v["version"] != 9.0 {
		t.Errorf("after the daemon's set, the session's version: %d %v", code, v)
	}

	_, doc := call(t, "GET", ts.url+"/openapi.json", "")
	paths, _ := doc["paths"].(map[string]any)
	pv, _ := paths["/policy_version"].(map[string]any)
	if pv["get"] == nil || pv["post"] == nil || paths["/episodes/{episode_id}/export"] == nil {
		t.Errorf("/openapi.json lacks the policy version or export routes")
	}
	if fork, _ := paths["/fork"].(map[string]any); fork["post"] == nil {
		t.Errorf("/openapi.json lacks POST /fork")
	}
	req, _ := http.NewRequest("GET", ts.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer api-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"harnessd_policy_version 9", "harnessd_model_calls_straddling_update_total ", `harnessd_model_calls_sampling_pinned_total{kind="pinned"}`} {
		if !bytes.Contains(mb, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
