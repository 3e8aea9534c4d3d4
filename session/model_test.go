package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// realKey is the distinctive upstream key of these tests: it must reach the
// fake engine and nothing else.
const realKey = "sk-REAL-upstream-key-7f3e9a1c"

// engine starts the fake LLM in engine mode.
func engine(t *testing.T) (*fakellm.Server, string) {
	t.Helper()
	srv := fakellm.New(fakellm.Options{Engine: true})
	url, err := srv.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, url
}

// engineConfig is config with the model gateway in front of the fake
// engine, the real key in the daemon's HARNESSD_TEST_REAL_KEY.
func engineConfig(t *testing.T, url string) *config.Config {
	t.Setenv("HARNESSD_TEST_REAL_KEY", realKey)
	cfg := testConfig(t)
	cfg.Harness.Model = config.ModelConfig{URL: url + "/v1", Name: "engine-model", APIKeyEnv: "HARNESSD_TEST_REAL_KEY",
		Upstream: config.ModelUpstreamEngine}
	// Passing the key's variable explicitly must not pass it.
	cfg.Harness.PassEnv = []string{"HARNESSD_TEST_REAL_KEY"}
	return cfg
}

// gatewayResponses returns the turn's llm_response events of origin gateway.
func gatewayResponses(evs []wire.Event) []*wire.LLMResponse {
	var out []*wire.LLMResponse
	for _, e := range evs {
		if r, ok := e.Data.(*wire.LLMResponse); ok && e.Origin == wire.OriginGateway {
			out = append(out, r)
		}
	}
	return out
}

// TestModelGatewayCapturesEngineIDs runs two turns whose test agent calls
// the model through the episode's gateway: each call's captured ids are the
// engine's, in its turn; the agent holds the per-episode key, never the
// real one; the export lines up, carries the reward and is written to
// record_dir at the episode's end.
func TestModelGatewayCapturesEngineIDs(t *testing.T) {
	llm, url := engine(t)
	cfg := engineConfig(t, url)
	cfg.RecordDir = t.TempDir()
	cfg.Rubrics = []rubric.Spec{{Name: "replied", Type: rubric.KindMatch, Contains: "MOCK-AUX"}}
	s := newSession(t, cfg)
	obs, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: "ep-model"})
	if err != nil || obs.Done {
		t.Fatalf("reset: %v %+v", err, obs)
	}
	turns := []string{
		"env HARNESSD_TEST_REAL_KEY;;env HARNESSD_MODEL_API_KEY;;env HARNESSD_MODEL_URL;;llm first question",
		"llm second question;;llm third question",
	}
	seen := 0
	var ids wire.CallTokenIDs // the episode's calls: later ones carry deltas
	deltas := 0
	for i, msg := range turns {
		n := i + 1
		o := step(t, s, msg)
		if o.Done || o.Metadata.ErrorType != "" {
			t.Fatalf("turn %d: %+v", n, o.Metadata)
		}
		resp := o.ResponseText()
		if strings.Contains(resp, realKey) || strings.Contains(resp, "llm error") {
			t.Fatalf("turn %d: %q", n, resp)
		}
		if n == 1 && (!strings.Contains(resp, "HARNESSD_TEST_REAL_KEY=<unset>") || !strings.Contains(resp, "HARNESSD_MODEL_API_KEY=sk-harnessd-") ||
			!strings.Contains(resp, "HARNESSD_MODEL_URL=http://127.0.0.1:")) {
			t.Fatalf("turn 1 environment: %q", resp)
		}
		if len(o.Metadata.ModelIssues) != 0 {
			t.Errorf("turn %d: model issues %+v", n, o.Metadata.ModelIssues)
		}
		entries := llm.Requests()
		rs := gatewayResponses(o.Metadata.TurnEvents)
		if len(rs) != len(entries)-seen {
			t.Fatalf("turn %d: %d gateway responses, %d engine requests", n, len(rs), len(entries)-seen)
		}
		if err := ids.AddEvents(o.Metadata.TurnEvents); err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		for j, r := range rs {
			e := entries[seen+j]
			prompt, completion, ok := e.EngineTokenIDs()
			if r.PromptTokenIDsFrom > 0 {
				deltas++
			}
			full, _ := ids.Prompt(r.CallIndex)
			if !ok || r.Traffic != gateway.TrafficTraining || !slices.Equal(full, prompt) || !slices.Equal(r.CompletionTokenIDs, completion) {
				t.Errorf("turn %d call %d: captured %d/%d ids (%s), engine %d/%d", n, r.CallIndex, len(full), len(r.CompletionTokenIDs), r.Traffic, len(prompt), len(completion))
			}
			if e.Headers["Authorization"] != "Bearer "+realKey || e.Model != "engine-model" {
				t.Errorf("upstream got %q for model %q", e.Headers["Authorization"], e.Model)
			}
		}
		for _, e := range o.Metadata.TurnEvents {
			if e.Origin == wire.OriginGateway && e.Turn != n {
				t.Errorf("turn %d: a gateway event of turn %d", n, e.Turn)
			}
		}
		seen = len(entries)
	}
	// Calls 2 and 3 extend call 1's conversation (call 3 in the next turn):
	// their events carry only the new prompt ids.
	if deltas != 2 {
		t.Errorf("%d of 3 calls carry their prompt ids as a delta, want 2", deltas)
	}

	ex, err := s.Export("ep-model")
	if err != nil {
		t.Fatal(err)
	}
	checkExport(t, ex, 3)
	if len(ex.Rewards) != 2 || ex.Rewards[0] != (gateway.Reward{Turn: 1, Reward: 1}) {
		t.Errorf("rewards %+v", ex.Rewards)
	}
	if _, err := s.Export("another"); !errors.Is(err, session.ErrUnknownEpisode) {
		t.Errorf("another episode: %v", err)
	}
	// The next reset ends the episode: its export is in record_dir.
	reset(t, s)
	b, err := os.ReadFile(filepath.Join(cfg.RecordDir, "ep-model.export.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), realKey) {
		t.Fatal("the real key is in the export")
	}
	var written gateway.Export
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	checkExport(t, &written, 3)
}

// checkExport asserts an export of calls chained calls: one chain whose
// arrays have one length, spans partitioning the ids, and the mask 1
// exactly on completion spans, with a logprob exactly there.
func checkExport(t *testing.T, ex *gateway.Export, calls int) {
	t.Helper()
	if ex.Format != gateway.ExportFormat || len(ex.Calls) != calls || len(ex.Chains) != 1 {
		t.Fatalf("export: format %q, %d calls, %d chains", ex.Format, len(ex.Calls), len(ex.Chains))
	}
	if issues := ex.Validate(); len(issues) != 0 {
		t.Fatalf("validate: %+v", issues)
	}
	ch := ex.Chains[0]
	if len(ch.InputIDs) != len(ch.LossMask) || len(ch.InputIDs) != len(ch.Logprobs) || len(ch.Calls) != calls {
		t.Fatalf("chain lengths %d/%d/%d, calls %v", len(ch.InputIDs), len(ch.LossMask), len(ch.Logprobs), ch.Calls)
	}
	at := 0
	for _, sp := range ch.Spans {
		if sp.Start != at || sp.End <= sp.Start {
			t.Fatalf("span %+v after %d", sp, at)
		}
		for i := sp.Start; i < sp.End; i++ {
			trained := sp.Kind == gateway.SpanCompletion
			if (ch.LossMask[i] == 1) != trained || (ch.Logprobs[i] != nil) != trained {
				t.Fatalf("position %d of span %+v: mask %d, logprob %v", i, sp, ch.LossMask[i], ch.Logprobs[i])
			}
		}
		at = sp.End
	}
	if at != len(ch.InputIDs) {
		t.Fatalf("spans end at %d of %d", at, len(ch.InputIDs))
	}
}

// TestModelBudgets exhausts each budget through a real session: the turn
// ends with a terminal model_budget observation naming the budget, the
// harness tree is gone, and the refusal is recorded.
func TestModelBudgets(t *testing.T) {
	cases := []struct {
		budget string
		set    func(e *config.EpisodeConfig)
		turns  []string // the last one runs out
	}{
		{gateway.BudgetModelCalls, func(e *config.EpisodeConfig) { e.MaxModelCalls = 2 }, []string{"llm one", "llm two;;llm three"}},
		{gateway.BudgetTurnModelCalls, func(e *config.EpisodeConfig) { e.MaxTurnModelCalls = 1 }, []string{"llm one", "llm two;;llm three"}},
		// The fake's answer to a call without tools, "MOCK-AUX", is 9
		// tokens: the second call of the budget's scope is refused.
		{gateway.BudgetOutputTokens, func(e *config.EpisodeConfig) { e.MaxOutputTokens = 5 }, []string{"llm one", "llm two"}},
		{gateway.BudgetTurnOutputTokens, func(e *config.EpisodeConfig) { e.MaxTurnOutputTokens = 5 }, []string{"llm one", "llm two;;llm three"}},
	}
	for _, c := range cases {
		t.Run(c.budget, func(t *testing.T) {
			_, url := engine(t)
			cfg := engineConfig(t, url)
			c.set(&cfg.Episode)
			s := newSession(t, cfg)
			reset(t, s)
			for i, msg := range c.turns {
				o := step(t, s, msg)
				last := i == len(c.turns)-1
				if !last {
					if o.Done || o.Metadata.ErrorType != "" {
						t.Fatalf("turn %d ended: %+v", i+1, o.Metadata)
					}
					continue
				}
				if !o.Done || o.Metadata.ErrorType != wire.FailureModelBudget || !strings.Contains(o.Metadata.Error, c.budget) {
					t.Fatalf("turn %d: done %v, %s: %s", i+1, o.Done, o.Metadata.ErrorType, o.Metadata.Error)
				}
				refused := false
				for _, r := range gatewayResponses(o.Metadata.TurnEvents) {
					refused = refused || (r.Status == 429 && strings.Contains(r.Error, c.budget))
				}
				if !refused {
					t.Errorf("no refused call recorded in the turn's events")
				}
			}
			st := s.State()
			if st.Active || st.HarnessAlive || st.LastError == nil || st.LastError.Type != wire.FailureModelBudget {
				t.Fatalf("state after the refusal: %+v", st)
			}
			if _, err := s.Step(context.Background(), wire.Action{Message: "llm more"}, nil); !errors.Is(err, session.ErrNoEpisode) {
				t.Fatalf("step after the refusal: %v", err)
			}
		})
	}
}

// TestModelPassthroughByDefault: with only model.url set the gateway passes
// the agent's dialect through (evaluation traffic), the agent still holds
// only the episode key, and there is no training export.
func TestModelPassthroughByDefault(t *testing.T) {
	llm := fakellm.New(fakellm.Options{})
	url, err := llm.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	t.Setenv("HARNESSD_TEST_REAL_KEY", realKey)
	cfg := testConfig(t)
	cfg.Harness.Model = config.ModelConfig{URL: url, APIKeyEnv: "HARNESSD_TEST_REAL_KEY"}
	s := newSession(t, cfg)
	reset(t, s)
	o := step(t, s, "llm hello")
	if !strings.Contains(o.ResponseText(), "llm: MOCK-AUX") {
		t.Fatalf("response %q", o.ResponseText())
	}
	rs := gatewayResponses(o.Metadata.TurnEvents)
	if len(rs) != 1 || rs[0].Traffic != gateway.TrafficEvaluation || len(rs[0].PromptTokenIDs) != 0 {
		t.Fatalf("gateway responses %+v", rs)
	}
	es := llm.Requests()
	if len(es) != 1 || es[0].Headers["Authorization"] != "Bearer "+realKey || es[0].Path != "/v1/chat/completions" {
		t.Fatalf("upstream saw %+v", es)
	}
	if _, err := s.Export(""); !errors.Is(err, gateway.ErrEvaluationTraffic) {
		t.Fatalf("export: %v", err)
	}
}

// TestModelConfigValidation names every bad model knob.
func TestModelConfigValidation(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"harness: {command: [a], model: {url: ftp://x}}", "harness.model.url"},
		{"harness: {command: [a], model: {url: http://x, upstream: vllm}}", `harness.model.upstream "vllm"`},
		{"harness: {command: [a], model: {url: http://x, dialect: cohere}}", `harness.model.dialect "cohere"`},
		{"harness: {command: [a], model: {url: http://x, upstream: engine, dialect: anthropic}}", "passthrough upstream only"},
		{"harness: {command: [a], model: {url: http://x, max_tokens: 10}}", "engine upstream only"},
		{"harness: {command: [a], model: {url: http://x, upstream: engine, max_tokens: -1}}", "max_tokens must not be negative"},
		{"harness: {command: [a], model: {api_key_env: K}}", "harness.model.api_key_env needs harness.model.url"},
		{"harness: {command: [a], model: {url: http://x, api_key_env: HARNESSD_API_TOKEN}}", "harnessd's own API token"},
		{"harness: {command: [a]}\nepisode: {max_model_calls: 3}", "episode.max_model_calls needs harness.model.url"},
		{"harness: {command: [a], model: {url: http://x}}\nepisode: {max_turn_output_tokens: -2}", "episode.max_turn_output_tokens must not be negative"},
		{"harness: {command: [a], model: {url: http://x, temperature: 1}}", "unknown key temperature"},
	} {
		_, err := config.ParseConfig([]byte(c.yaml), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
	cfg, err := config.ParseConfig([]byte("harness: {command: [a], model: {url: http://x/v1, upstream: engine, max_tokens: 512, timeout: 30s}}\n"+
		"episode: {max_model_calls: 8, max_output_tokens: 4096, max_turn_model_calls: 4, max_turn_output_tokens: 1024}"), "")
	if err != nil || cfg.Harness.Model.UpstreamKind() != "engine" || cfg.Episode.MaxTurnOutputTokens != 1024 {
		t.Fatalf("valid: %v %+v", err, cfg)
	}
	if got := (&config.ModelConfig{URL: "http://x"}).UpstreamKind(); got != config.DefaultModelUpstream {
		t.Errorf("default upstream %q", got)
	}
}

// TestModelIssuesInObservation: an "engine" that returns no token ids (a
// plain chat server) and one that reports tokens as text have their calls
// graded in the turn's observation; the first has no training export.
func TestModelIssuesInObservation(t *testing.T) {
	for _, c := range []struct {
		opts     fakellm.Options
		code     string
		severity gateway.Severity
		export   error
	}{
		{fakellm.Options{}, gateway.IssueMissingTokenIDs, gateway.SeverityFatal, session.ErrNoTrainingCalls},
		{fakellm.Options{Engine: true, EngineTokensAsText: true}, gateway.IssueTokensAsText, gateway.SeverityWarn, nil},
	} {
		t.Run(c.code, func(t *testing.T) {
			llm := fakellm.New(c.opts)
			url, err := llm.Start("")
			if err != nil {
				t.Fatal(err)
			}
			defer llm.Close()
			s := newSession(t, engineConfig(t, url))
			reset(t, s)
			o := step(t, s, "llm hello;;llm again")
			found := false
			for _, is := range o.Metadata.ModelIssues {
				found = found || (is.Code == c.code && is.Severity == string(c.severity) && is.CallIndex == 1)
			}
			if !found || o.Done {
				t.Fatalf("issues %+v (done %v), want %s %s on call 1", o.Metadata.ModelIssues, o.Done, c.severity, c.code)
			}
			if _, err := s.Export(""); !errors.Is(err, c.export) {
				t.Fatalf("export: %v, want %v", err, c.export)
			} else if err != nil && !strings.Contains(err.Error(), "none of its 2 model calls is usable") {
				t.Fatalf("export: %v, want it to say none of the 2 calls is usable", err)
			}
		})
	}
}

// TestModelListenerIsAParameter: the session opens each episode's gateway
// listener through Options.ModelListener, and the agent is pointed there.
func TestModelListenerIsAParameter(t *testing.T) {
	_, url := engine(t)
	cfg := engineConfig(t, url)
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	var asked []string
	var addrs []string
	s, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t),
		ModelListener: func(episodeID string) (net.Listener, error) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err == nil {
				asked, addrs = append(asked, episodeID), append(addrs, ln.Addr().String())
			}
			return ln, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for _, id := range []string{"ep-a", "ep-b"} {
		if obs, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: id}); err != nil || obs.Done {
			t.Fatalf("reset: %v %+v", err, obs)
		}
		o := step(t, s, "env HARNESSD_MODEL_URL")
		if want := "HARNESSD_MODEL_URL=http://" + addrs[len(addrs)-1]; !strings.Contains(o.ResponseText(), want) {
			t.Fatalf("%s: %q, want %q", id, o.ResponseText(), want)
		}
	}
	if !slices.Equal(asked, []string{"ep-a", "ep-b"}) || addrs[0] == addrs[1] {
		t.Fatalf("listeners asked for %v at %v", asked, addrs)
	}
}

// episode.full_token_ids makes the gateway's events whole; a reset's
// FullTokenIDs overrides it either way, on a cold reset and on a warm
// standby's handover alike.
func TestFullTokenIDsOption(t *testing.T) {
	for _, warm := range []int{0, 1} {
		t.Run(fmt.Sprint("warm", warm), func(t *testing.T) { fullTokenIDsOption(t, warm) })
	}
}

func fullTokenIDsOption(t *testing.T, warm int) {
	_, url := engine(t)
	cfg := engineConfig(t, url)
	cfg.Episode.FullTokenIDs = true
	cfg.Warm = warm
	s := newSession(t, cfg)
	no, yes := false, true
	for i, c := range []struct {
		opt   *bool
		delta bool
	}{{nil, false}, {&no, true}, {&yes, false}, {&no, true}} {
		obs, err := s.Reset(context.Background(), session.ResetOptions{FullTokenIDs: c.opt})
		if err != nil || obs.Done {
			t.Fatalf("reset: %v %+v", err, obs)
		}
		if warm > 0 && i > 0 && !obs.Metadata.Standby {
			t.Fatalf("reset %d did not take the standby", i+1)
		}
		o := step(t, s, "llm first;;llm second")
		var req *wire.LLMRequest
		for _, e := range o.Metadata.TurnEvents {
			if r, ok := e.Data.(*wire.LLMRequest); ok && r.CallIndex == 2 {
				req = r
			}
		}
		rs := gatewayResponses(o.Metadata.TurnEvents)
		if len(rs) != 2 || req == nil {
			t.Fatalf("option %v: %d responses, request %v", c.opt, len(rs), req)
		}
		if got := rs[1].PromptTokenIDsFrom > 0 && req.MessagesFrom > 0; got != c.delta || rs[1].ParentCallIndex != 1 {
			t.Errorf("option %v: call 2 from %d (parent %d), messages from %d; want deltas %v", c.opt, rs[1].PromptTokenIDsFrom, rs[1].ParentCallIndex, req.MessagesFrom, c.delta)
		}
	}
}
