package atif_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The schema in testdata is written from Harbor's RFC 0001 (ATIF v1.7):
// its field tables (required, optional, types, enums), the rule that
// model_name, reasoning fields, tool_calls and metrics belong to agent
// steps, llm_call_count 0's absent metrics, content parts and subagent
// refs. What a JSON Schema cannot say — step ids counting from 1, every
// source_call_id naming a tool call of its step, unique ids — validate
// checks beside it, as Harbor's own validator does.

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func atifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() {
		p, err := filepath.Abs(filepath.Join("testdata", "atif-v1.7.schema.json"))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat() // timestamps are ISO 8601 date-times
		schema, schemaErr = c.Compile(p)
	})
	if schemaErr != nil {
		t.Fatalf("compiling the ATIF schema: %v", schemaErr)
	}
	return schema
}

// validate checks doc (one ATIF document) against the schema and the
// spec's cross-field rules; it returns every problem found.
func validate(t *testing.T, doc []byte) []string {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var problems []string
	if err := atifSchema(t).Validate(inst); err != nil {
		problems = append(problems, "schema: "+err.Error())
	}
	var tr docTrajectory
	if err := json.Unmarshal(doc, &tr); err != nil {
		return append(problems, "decoding: "+err.Error())
	}
	return append(problems, crossField(tr, "")...)
}

type docTrajectory struct {
	SchemaVersion string          `json:"schema_version"`
	TrajectoryID  *string         `json:"trajectory_id"`
	Steps         []docStep       `json:"steps"`
	Subagents     []docTrajectory `json:"subagent_trajectories"`
}

type docStep struct {
	StepID    int `json:"step_id"`
	ToolCalls []struct {
		ID        string          `json:"tool_call_id"`
		Name      string          `json:"function_name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
	Observation *struct {
		Results []struct {
			SourceCallID *string `json:"source_call_id"`
			Content      any     `json:"content"`
		} `json:"results"`
	} `json:"observation"`
	Metrics *struct {
		PromptTokens       *int      `json:"prompt_tokens"`
		CompletionTokens   *int      `json:"completion_tokens"`
		PromptTokenIDs     []int     `json:"prompt_token_ids"`
		CompletionTokenIDs []int     `json:"completion_token_ids"`
		Logprobs           []float64 `json:"logprobs"`
	} `json:"metrics"`
	Extra map[string]any `json:"extra"`
}

func crossField(tr docTrajectory, at string) []string {
	var problems []string
	seenCall := map[string]bool{}
	for i, s := range tr.Steps {
		if s.StepID != i+1 {
			problems = append(problems, fmt.Sprintf("%ssteps[%d]: step_id %d, want %d (sequential from 1)", at, i, s.StepID, i+1))
		}
		ids := map[string]bool{}
		for _, c := range s.ToolCalls {
			if seenCall[c.ID] {
				problems = append(problems, fmt.Sprintf("%ssteps[%d]: tool_call_id %q is not unique", at, i, c.ID))
			}
			seenCall[c.ID], ids[c.ID] = true, true
		}
		if s.Observation != nil {
			for j, r := range s.Observation.Results {
				if r.SourceCallID != nil && !ids[*r.SourceCallID] {
					problems = append(problems, fmt.Sprintf("%ssteps[%d].observation.results[%d]: source_call_id %q names no tool call of the step", at, i, j, *r.SourceCallID))
				}
			}
		}
		if m := s.Metrics; m != nil {
			if m.Logprobs != nil && m.CompletionTokenIDs != nil && len(m.Logprobs) != len(m.CompletionTokenIDs) {
				problems = append(problems, fmt.Sprintf("%ssteps[%d].metrics: %d logprobs for %d completion tokens", at, i, len(m.Logprobs), len(m.CompletionTokenIDs)))
			}
		}
	}
	subIDs := map[string]bool{}
	for k, sub := range tr.Subagents {
		where := fmt.Sprintf("%ssubagent_trajectories[%d].", at, k)
		if sub.TrajectoryID != nil {
			if subIDs[*sub.TrajectoryID] {
				problems = append(problems, where+"trajectory_id is not unique")
			}
			subIDs[*sub.TrajectoryID] = true
		}
		problems = append(problems, crossField(sub, where)...)
	}
	return problems
}

// validDoc is a small document by the spec's own example, valid.
const validDoc = `{
  "schema_version": "ATIF-v1.7",
  "session_id": "s",
  "agent": {"name": "a", "version": "1"},
  "steps": [
    {"step_id": 1, "timestamp": "2025-10-11T10:30:00Z", "source": "user", "message": "price of GOOGL?"},
    {"step_id": 2, "source": "agent", "model_name": "m", "message": "searching",
     "tool_calls": [{"tool_call_id": "c1", "function_name": "financial_search", "arguments": {"ticker": "GOOGL"}}],
     "observation": {"results": [{"source_call_id": "c1", "content": "185.35"}]},
     "metrics": {"prompt_tokens": 3, "completion_tokens": 2, "completion_token_ids": [5, 6], "logprobs": [-0.1, -0.2]},
     "llm_call_count": 1}
  ],
  "final_metrics": {"total_prompt_tokens": 3, "total_completion_tokens": 2, "total_steps": 2}
}`

// The validator has to reject things, or every "validates" in the
// suite passes vacuously: each case breaks one rule of the spec.
func TestValidatorRejectsWhatTheSpecForbids(t *testing.T) {
	if p := validate(t, []byte(validDoc)); len(p) != 0 {
		t.Fatalf("the valid document is refused: %v", p)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"no schema_version", `"schema_version": "ATIF-v1.7",`, ``},
		{"another format's version", `"ATIF-v1.7"`, `"OTHER-v1"`},
		{"agent without version", `"agent": {"name": "a", "version": "1"}`, `"agent": {"name": "a"}`},
		{"an unknown root field", `"session_id": "s",`, `"session_id": "s", "sessionId": "s",`},
		{"step ids not from 1", `"step_id": 1,`, `"step_id": 0,`},
		{"step ids out of order", `"step_id": 2,`, `"step_id": 3,`},
		{"an unknown source", `"source": "user"`, `"source": "human"`},
		{"no message", `"source": "user", "message": "price of GOOGL?"`, `"source": "user"`},
		{"a timestamp that is not ISO 8601", `"2025-10-11T10:30:00Z"`, `"yesterday"`},
		{"tool calls on a user step", `"message": "price of GOOGL?"`, `"message": "price of GOOGL?", "tool_calls": []`},
		{"metrics on a user step", `"message": "price of GOOGL?"`, `"message": "price of GOOGL?", "metrics": {}`},
		{"arguments not an object", `"arguments": {"ticker": "GOOGL"}`, `"arguments": "GOOGL"`},
		{"a tool call without its id", `"tool_call_id": "c1", `, ``},
		{"a result naming no call of its step", `"source_call_id": "c1"`, `"source_call_id": "c2"`},
		{"an observation without results", `{"results": [{"source_call_id": "c1", "content": "185.35"}]}`, `{}`},
		{"token ids that are not integers", `[5, 6]`, `[5.5, 6]`},
		{"logprobs not aligned with the tokens", `[-0.1, -0.2]`, `[-0.1]`},
		{"metrics on a no-LLM dispatch", `"llm_call_count": 1`, `"llm_call_count": 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(validDoc, tc.from) {
				t.Fatalf("the case's text %q is not in the document", tc.from)
			}
			doc := strings.Replace(validDoc, tc.from, tc.to, 1)
			if p := validate(t, []byte(doc)); len(p) == 0 {
				t.Errorf("accepted:\n%s", doc)
			}
		})
	}
}
