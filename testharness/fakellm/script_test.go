package fakellm_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

func TestParseScript(t *testing.T) {
	good := `{"rules": [
	  {"name": "a", "when": {"tool_result": false, "no_tools": false, "nth": 2, "dialect": "gemini", "model": "x",
	    "user_contains": "u", "system_contains": "s", "tool_offered": "t"},
	   "reply": {"text": "{{user}} {{ tools }}", "delay": "1.5s"}},
	  {"when": {}, "reply": {"delay": 2}},
	  {"when": {}, "reply": {"error": {"status": 503, "message": "busy {{n}}"}}}
	]}`
	sc, err := fakellm.ParseScript([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Rules) != 3 || time.Duration(sc.Rules[0].Reply.Delay) != 1500*time.Millisecond ||
		time.Duration(sc.Rules[1].Reply.Delay) != 2*time.Second || *sc.Rules[0].When.ToolResult {
		t.Errorf("parsed %+v", sc)
	}
	// A script survives a JSON round trip (GET /_fakellm/script serves it).
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fakellm.ParseScript(b); err != nil {
		t.Errorf("round trip: %v\n%s", err, b)
	}

	bad := map[string]string{
		"unknown field":          `{"rules": [{"when": {"tool_name": "x"}, "reply": {"text": "t"}}]}`,
		"unknown reply field":    `{"rules": [{"when": {}, "reply": {"txt": "t"}}]}`,
		"unknown top field":      `{"rule": []}`,
		"not json":               `{"rules": [`,
		"trailing data":          `{"rules": []} {}`,
		"unknown dialect":        `{"rules": [{"when": {"dialect": "cohere"}, "reply": {"text": "t"}}]}`,
		"negative nth":           `{"rules": [{"when": {"nth": -1}, "reply": {"text": "t"}}]}`,
		"bad delay":              `{"rules": [{"when": {}, "reply": {"delay": "soon"}}]}`,
		"negative delay":         `{"rules": [{"when": {}, "reply": {"delay": "-1s"}}]}`,
		"unknown placeholder":    `{"rules": [{"when": {}, "reply": {"text": "{{nope}}"}}]}`,
		"placeholder in args":    `{"rules": [{"when": {}, "reply": {"tool": "t", "arguments": {"a": ["{{nope}}"]}}}]}`,
		"arguments not object":   `{"rules": [{"when": {}, "reply": {"tool": "t", "arguments": [1]}}]}`,
		"arguments without tool": `{"rules": [{"when": {}, "reply": {"arguments": {}}}]}`,
		"call without tool":      `{"rules": [{"when": {}, "reply": {"calls": [{"arguments": {}}]}}]}`,
		"error with text":        `{"rules": [{"when": {}, "reply": {"text": "t", "error": {"status": 400, "message": "m"}}}]}`,
		"error status":           `{"rules": [{"when": {}, "reply": {"error": {"status": 200, "message": "m"}}}]}`,
	}
	for name, js := range bad {
		if _, err := fakellm.ParseScript([]byte(js)); err == nil {
			t.Errorf("%s: accepted %s", name, js)
		}
	}
}

func TestLoadScript(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(p, []byte(`{"rules": [{"when": {}, "reply": {"text": "hi"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if sc, err := fakellm.LoadScript(p); err != nil || len(sc.Rules) != 1 {
		t.Errorf("LoadScript: %v %+v", err, sc)
	}
	if _, err := fakellm.LoadScript(p + ".missing"); err == nil {
		t.Error("missing file accepted")
	}
}

// TestMatchConditions checks each condition can both match and not match,
// and that the first matching rule wins.
func TestMatchConditions(t *testing.T) {
	sc := mustScript(t, `{"rules": [
	  {"name": "nth3", "when": {"nth": 3}, "reply": {"text": "third"}},
	  {"name": "gem", "when": {"dialect": "gemini", "user_contains": "dialect"}, "reply": {"text": "gemini!"}},
	  {"name": "model", "when": {"model": "special"}, "reply": {"text": "special model"}},
	  {"name": "sys", "when": {"system_contains": "title generator"}, "reply": {"text": "A Title"}},
	  {"name": "tools-none", "when": {"no_tools": true}, "reply": {"text": "no tools"}},
	  {"name": "not-result", "when": {"tool_result": false, "tool_offered": "zzz"}, "reply": {"text": "zzz offered"}},
	  {"name": "has-tools", "when": {"no_tools": false, "user_contains": "CASE"}, "reply": {"text": "has tools"}}
	]}`)
	type step struct {
		d    fakellm.Dialect
		c    conv
		want string
		rule string
	}
	tools, other := []tspec{{Name: "a_zzz"}}, []tspec{{Name: "other"}}
	steps := []step{
		{fakellm.Anthropic, conv{Model: "m", Users: []string{"dialect"}, Tools: other}, "MOCK-REPLY: dialect", "default:reply"},
		{fakellm.Gemini, conv{Model: "m", Users: []string{"dialect"}, Tools: other}, "gemini!", "gem"},
		{fakellm.Gemini, conv{Model: "m", Users: []string{"dialect"}, Tools: other}, "third", "nth3"},
		{fakellm.OpenAIChat, conv{Model: "a-special-one", Users: []string{"x"}}, "special model", "model"},
		{fakellm.OpenAIResponses, conv{Model: "m", System: "You are a title generator.", Users: []string{"x"}, Tools: tools}, "A Title", "sys"},
		{fakellm.OpenAIResponses, conv{Model: "m", Users: []string{"x"}}, "no tools", "tools-none"},
		{fakellm.OpenAIChat, conv{Model: "m", Users: []string{"x"}, Tools: tools}, "zzz offered", "not-result"},
		{fakellm.OpenAIChat, conv{Model: "m", Users: []string{"x"}, Tools: tools, Call: &call{ID: "c1", Name: "a_zzz", Args: "{}"}, Result: "r"},
			"MOCK-DONE: r", "default:tool-result"},
		{fakellm.Anthropic, conv{Model: "m", Users: []string{"CASE"}, Tools: other}, "has tools", "has-tools"},
		{fakellm.Anthropic, conv{Model: "m", Users: []string{"case"}, Tools: other}, "MOCK-REPLY: case", "default:reply"},
	}
	s, base, hc := startServer(t, sc)
	for i, st := range steps {
		got := clientFor(st.d).do(t, hc, base, st.c)
		e := s.Requests()[i]
		if got.Text != st.want || e.Rule != st.rule {
			t.Errorf("step %d (%s): text %q rule %q, want %q by %q", i, st.d, got.Text, e.Rule, st.want, st.rule)
		}
	}
}

func TestUnresolvedToolAndDefaultFallthrough(t *testing.T) {
	sc := mustScript(t, `{"rules": [
	  {"name": "missing", "when": {"user_contains": "missing"}, "reply": {"tool": "nosuch"}},
	  {"name": "wait-then-default", "when": {"user_contains": "wait"}, "reply": {"delay": "1ms"}}
	]}`)
	s, base, hc := startServer(t, sc)
	c := conv{Model: "m", Tools: []tspec{{Name: "alpha"}, {Name: "beta"}}, Users: []string{"missing"}}
	got := chatClient.do(t, hc, base, c)
	if got.Text != `MOCK-NO-TOOL: no offered tool matches "nosuch" (offered: alpha, beta)` || len(got.Calls) != 0 {
		t.Errorf("got %+v", got)
	}
	if e := s.Requests()[0]; e.Rule != "missing" || !strings.HasPrefix(e.Note, "MOCK-NO-TOOL") {
		t.Errorf("entry %+v", e)
	}
	c.Users = []string{"wait"}
	got = chatClient.do(t, hc, base, c)
	if got.Text != "MOCK-REPLY: wait" {
		t.Errorf("got %+v", got)
	}
	if e := s.Requests()[1]; e.Rule != "wait-then-default -> default:reply" {
		t.Errorf("rule %q", e.Rule)
	}
}

// TestRuntimeScript replaces the script over HTTP and in process.
func TestRuntimeScript(t *testing.T) {
	s, base, hc := startServer(t, nil)
	c := conv{Model: "m", Tools: []tspec{{Name: "t"}}, Users: []string{"hi"}}
	if got := geminiClient.do(t, hc, base, c); got.Text != "MOCK-REPLY: hi" {
		t.Fatalf("default: %+v", got)
	}

	put := func(body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, base+"/_fakellm/script", strings.NewReader(body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, mustRead(t, resp.Body)
	}
	if code, body := put(`{"rules": [{"when": {}, "reply": {"text": "replaced {{user}}"}}]}`); code != 200 {
		t.Fatalf("PUT script: %d %s", code, body)
	}
	if got := geminiClient.do(t, hc, base, c); got.Text != "replaced hi" {
		t.Errorf("after PUT: %+v", got)
	}
	if code, body := put(`{"rules": [{"when": {"bogus": 1}, "reply": {}}]}`); code != 400 || !strings.Contains(body, "bogus") {
		t.Errorf("bad PUT: %d %s", code, body)
	}
	if got := geminiClient.do(t, hc, base, c); got.Text != "replaced hi" {
		t.Errorf("a rejected script replaced the old one: %+v", got)
	}

	resp, err := hc.Get(base + "/_fakellm/script")
	if err != nil {
		t.Fatal(err)
	}
	cur := decode[fakellm.Script](t, mustRead(t, resp.Body))
	resp.Body.Close()
	if len(cur.Rules) != 1 || cur.Rules[0].Reply.Text != "replaced {{user}}" {
		t.Errorf("GET script: %+v", cur)
	}

	if err := s.SetScript(&fakellm.Script{Rules: []fakellm.Rule{{Reply: fakellm.Reply{Text: "{{bad}}"}}}}); err == nil {
		t.Error("SetScript accepted an invalid script")
	}
	if err := s.SetScript(nil); err != nil {
		t.Fatal(err)
	}
	if got := geminiClient.do(t, hc, base, c); got.Text != "MOCK-REPLY: hi" {
		t.Errorf("after SetScript(nil): %+v", got)
	}
}
