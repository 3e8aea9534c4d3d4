package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// pinYAML is the sampling every /ws episode pins (harness.model.sampling):
// values no agent sends of itself, stop sequences stripped too, so that
// the engine must receive exactly these fields.
const pinYAML = "{temperature: 0.55, top_p: 0.85, top_k: 17, min_p: 0.03, seed: 4242, max_tokens: 3000, strip_stop: true}"

// pinnedSampling is pinYAML as the engine's request body has it.
var pinnedSampling = map[string]any{"temperature": 0.55, "top_p": 0.85, "top_k": 17.0, "min_p": 0.03, "seed": 4242.0, "max_tokens": 3000.0}

// samplingFields are the request fields a pin decides, by Chat
// Completions name: what the engine may receive of sampling.
var samplingFields = append([]string{"temperature", "top_p", "top_k", "min_p", "seed", "max_tokens",
	"max_completion_tokens", "stop", "stop_token_ids"}, gateway.DistortingFields...)

// sendsNoSampling lists the agents whose model requests carry no sampling
// field at all (Codex 0.16.0 via codex-acp: its Responses requests name
// neither temperature, top_p nor max_output_tokens); the engine must still
// receive exactly the pin.
var sendsNoSampling = map[string]bool{"codex": true}

// pinConfig writes the /ws episodes' configuration file for agent name:
// the engine upstream behind the gateway, with the pin (the flags give the
// rest, as for every daemon of the suite).
func (s *suite) pinConfig(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "env.yaml")
	yaml := fmt.Sprintf("harness:\n  agent: %s\n  model:\n    url: %s/%s\n    upstream: engine\n    sampling: %s\n", name, s.llmURL, name, pinYAML)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// engineSampling returns the sampling fields of an engine request's body.
func engineSampling(t *testing.T, e fakellm.Entry) map[string]any {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatalf("engine request %d: %v", e.Seq, err)
	}
	out := map[string]any{}
	for k, v := range body {
		if slices.Contains(samplingFields, k) {
			out[k] = v
		}
	}
	return out
}

// checkPinned checks the pin end to end for one agent's /ws episode: the
// agent asked for sampling of its own (the gateway's llm_request events
// record it, in the agent's dialect); every engine request of the agent got
// exactly the pinned fields; the export marks every call pinned, none
// differing, with the agent's own fields overridden or stripped (unless
// the agent is one of sendsNoSampling). It returns what the agent asked,
// for the report.
func checkPinned(t *testing.T, agent, url, episodeID string, evs []wire.Event, entries []fakellm.Entry) string {
	t.Helper()
	asked := map[string]string{} // field -> a value the agent sent
	for _, e := range evs {
		if r, ok := e.Data.(*wire.LLMRequest); ok && e.Origin == wire.OriginGateway {
			var m map[string]json.RawMessage
			json.Unmarshal(r.Sampling, &m)
			for k, v := range m {
				asked[k] = string(v)
			}
		}
	}
	engine := 0
	for _, en := range entries {
		if _, _, ok := en.EngineTokenIDs(); !ok {
			continue
		}
		engine++
		if got := engineSampling(t, en); !reflect.DeepEqual(got, pinnedSampling) {
			t.Errorf("engine request %d got sampling %v, want exactly the pin %v", en.Seq, got, pinnedSampling)
		}
	}
	if engine == 0 {
		t.Errorf("no engine request to check the pin on")
	}
	doc, err := exportOf(context.Background(), url, episodeID)
	if err != nil {
		t.Fatal(err)
	}
	ex := doc.Export
	if ex.PinnedSampling == nil || !ex.PinnedSampling.StripStop {
		t.Errorf("export: pinned_sampling %+v", ex.PinnedSampling)
	}
	changed := 0 // calls whose own sampling the pin overrode or stripped
	for _, c := range ex.Calls {
		var sent map[string]any
		json.Unmarshal(c.EffectiveSampling, &sent)
		delete(sent, "logprobs")
		delete(sent, "return_token_ids")
		if !c.SamplingPinned || len(c.SamplingDiffers) > 0 || !reflect.DeepEqual(sent, pinnedSampling) {
			t.Errorf("export: call %d pinned %v, differs %v, effective %v", c.CallIndex, c.SamplingPinned, c.SamplingDiffers, sent)
		}
		if len(c.SamplingOverridden) > 0 || len(c.SamplingStripped) > 0 {
			changed++
		}
	}
	if len(asked) == 0 && sendsNoSampling[agent] {
		return "none"
	}
	if sendsNoSampling[agent] {
		t.Errorf("%s now asks for sampling of its own (%v): take it out of sendsNoSampling", agent, asked)
	}
	if len(asked) == 0 || changed == 0 {
		t.Errorf("the agent asked for no sampling of its own (%v), or the export shows none overridden or stripped (%d of %d calls)",
			asked, changed, len(ex.Calls))
	}
	keys := make([]string, 0, len(asked))
	for k, v := range asked {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}
