package fakellm_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

func getJSON[T any](t *testing.T, hc *http.Client, url string) T {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	return decode[T](t, mustRead(t, resp.Body))
}

// TestRequestLog checks the log over HTTP (with and without bodies), the
// headers of interest, reset, and that auxiliary routes are logged but do
// not count for nth.
func TestRequestLog(t *testing.T) {
	s, base, hc := startServer(t, nil)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/messages?beta=true",
		strings.NewReader(`{"model":"claude-x","stream":false,"messages":[{"role":"user","content":"hello"}],"tools":[{"name":"Read"}]}`))
	req.Header.Set("X-Api-Key", "sk-test")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Anthropic-Beta", "claude-code-20250219,context-management-2025-06-27")
	req.Header.Set("User-Agent", "claude-cli/2.1.197 (external, sdk-cli)")
	req.Header.Set("Cookie", "not-recorded")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	geminiClient.do(t, hc, base, conv{Model: "gemini-2.5-pro", Users: []string{"second"}, Tools: []tspec{{Name: "glob"}}, Stream: true})

	entries := getJSON[[]fakellm.Entry](t, hc, base+"/_fakellm/requests")
	if len(entries) != 2 {
		t.Fatalf("%d entries", len(entries))
	}
	e := entries[0]
	if e.Seq != 1 || e.N != 1 || e.Method != "POST" || e.Path != "/v1/messages" || e.Query != "beta=true" ||
		e.Dialect != fakellm.Anthropic || e.Model != "claude-x" || e.Stream || e.Messages != 1 ||
		e.LastUser != "hello" || e.ToolResult || e.Rule != "default:reply" || e.ReplyText != "MOCK-REPLY: hello" ||
		len(e.Tools) != 1 || e.Tools[0] != "Read" || e.Time.IsZero() {
		t.Errorf("entry %+v", e)
	}
	if e.Headers["X-Api-Key"] != "sk-test" || e.Headers["Anthropic-Version"] != "2023-06-01" ||
		!strings.Contains(e.Headers["Anthropic-Beta"], "context-management") || e.Headers["User-Agent"] == "" {
		t.Errorf("headers %v", e.Headers)
	}
	if _, ok := e.Headers["Cookie"]; ok {
		t.Errorf("uninteresting header recorded: %v", e.Headers)
	}
	if e.Body != nil {
		t.Errorf("body served without ?bodies=1")
	}
	if g := entries[1]; g.Dialect != fakellm.Gemini || g.Model != "gemini-2.5-pro" || !g.Stream || g.Query != "alt=sse" || g.N != 2 {
		t.Errorf("gemini entry %+v", g)
	}

	withBodies := getJSON[[]fakellm.Entry](t, hc, base+"/_fakellm/requests?bodies=1")
	var body struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(withBodies[0].Body, &body); err != nil || body.Model != "claude-x" {
		t.Errorf("body %s: %v", withBodies[0].Body, err)
	}
	if in := s.Requests(); in[0].Body == nil {
		t.Errorf("Requests() lacks bodies")
	}

	// Auxiliary routes are logged, not counted.
	for _, p := range []string{"/v1/messages/count_tokens", "/v1beta/models/m:countTokens"} {
		resp, err := hc.Post(base+p, "application/json", strings.NewReader(`{"messages":[],"contents":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	getJSON[map[string]any](t, hc, base+"/v1/models")
	chatClient.do(t, hc, base, conv{Model: "m", Users: []string{"third"}})
	entries = s.Requests()
	kinds := []string{}
	for _, e := range entries {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "generate,generate,count_tokens,count_tokens,models,generate" || entries[5].N != 3 {
		t.Errorf("kinds %v, last n %d", kinds, entries[5].N)
	}

	// Reset clears the log and restarts nth.
	resp, err = hc.Post(base+"/_fakellm/reset", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d entries after reset", n)
	}
	chatClient.do(t, hc, base, conv{Model: "m", Users: []string{"again"}})
	if e := s.Requests(); len(e) != 1 || e[0].Seq != 1 || e[0].N != 1 {
		t.Errorf("after reset %+v", e)
	}
	s.Reset()
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d entries after Reset()", n)
	}

	// Control routes are not logged; unknown control routes are 404.
	resp, err = hc.Get(base + "/_fakellm/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || len(s.Requests()) != 0 {
		t.Errorf("unknown control route: %d, %d entries", resp.StatusCode, len(s.Requests()))
	}
	if h := getJSON[map[string]any](t, hc, base+"/_fakellm/health"); h["ok"] != true {
		t.Errorf("health %v", h)
	}
}

func TestCountTokensModelsProbe(t *testing.T) {
	s, base, hc := startServer(t, nil)
	post := func(path, body string) map[string]any {
		resp, err := hc.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return decode[map[string]any](t, mustRead(t, resp.Body))
	}
	long := strings.Repeat("word ", 200)
	if r := post("/v1/messages/count_tokens?beta=true", `{"model":"m","messages":[{"role":"user","content":"`+long+`"}],"tools":[]}`); r["input_tokens"].(float64) < 100 {
		t.Errorf("count_tokens %v", r)
	}
	if r := post("/v1beta/models/gemini-x:countTokens", `{"contents":[{"role":"user","parts":[{"text":"`+long+`"}]}]}`); r["totalTokens"].(float64) < 100 {
		t.Errorf("countTokens %v", r)
	}

	oa := getJSON[struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
			Type   string `json:"type"`
		} `json:"data"`
	}](t, hc, base+"/v1/models")
	if oa.Object != "list" || len(oa.Data) != 1 || oa.Data[0].ID != fakellm.DefaultModel || oa.Data[0].Object != "model" || oa.Data[0].Type != "model" {
		t.Errorf("models %+v", oa)
	}
	gm := getJSON[struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}](t, hc, base+"/v1beta/models")
	if len(gm.Models) != 1 || gm.Models[0].Name != "models/"+fakellm.DefaultModel {
		t.Errorf("gemini models %+v", gm)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodHead, base+"/", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HEAD / %d", resp.StatusCode)
	}
	kinds := []string{}
	for _, e := range s.Requests() {
		kinds = append(kinds, e.Kind)
		if e.N != 0 {
			t.Errorf("aux request counted: %+v", e)
		}
	}
	if strings.Join(kinds, ",") != "count_tokens,count_tokens,models,models,probe" {
		t.Errorf("kinds %v", kinds)
	}
}

// TestPathPrefix: routes match on the path suffix, so a base URL may carry
// a prefix that tells agents apart in the log.
func TestPathPrefix(t *testing.T) {
	s, base, hc := startServer(t, nil)
	got := chatClient.do(t, hc, base+"/agent-a", conv{Model: "m", Users: []string{"prefixed"}, Tools: []tspec{{Name: "t"}}})
	if got.Text != "MOCK-REPLY: prefixed" || s.Requests()[0].Path != "/agent-a/v1/chat/completions" {
		t.Errorf("%+v %+v", got, s.Requests())
	}
}

// TestConcurrentRequests: parallel requests in every dialect each get their
// own answer and a distinct nth number.
func TestConcurrentRequests(t *testing.T) {
	s, base, hc := startServer(t, mustScript(t, `{"rules": [{"when": {}, "reply": {"text": "n={{n}} {{user}}"}}]}`))
	const per = 8
	type result struct{ err string }
	results := make(chan result, per*len(clients))
	for _, dc := range clients {
		for i := range per {
			go func() {
				c := conv{Model: "m", Users: []string{dc.url("", conv{Model: "m"}) + "#" + string(rune('a'+i))}, Stream: i%2 == 0}
				resp, err := postJSON(t.Context(), hc, dc.url(base, c), dc.body(c))
				if err != nil {
					results <- result{err: err.Error()}
					return
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					results <- result{err: resp.Status}
					return
				}
				// Framing is checked elsewhere; the log shows the answers.
				if _, err := io.ReadAll(resp.Body); err != nil {
					results <- result{err: err.Error()}
					return
				}
				results <- result{}
			}()
		}
	}
	for range per * len(clients) {
		if r := <-results; r.err != "" {
			t.Fatal(r.err)
		}
	}
	log := s.Requests()
	ns := map[int]bool{}
	for _, e := range log {
		ns[e.N] = true
		if want := fmt.Sprintf("n=%d %s", e.N, e.LastUser); e.ReplyText != want || e.Outcome != fakellm.OutcomeOK {
			t.Errorf("entry %d answered %q (%s), want %q", e.Seq, e.ReplyText, e.Outcome, want)
		}
	}
	if len(log) != per*len(clients) || len(ns) != len(log) {
		t.Errorf("%d entries with %d distinct n", len(log), len(ns))
	}
}
