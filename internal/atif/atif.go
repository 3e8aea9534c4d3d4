// Package atif converts an episode's record file (wire.Record lines, see
// docs/configuration.md#record-files) and, when there is one, the model
// gateway's training export (<record_dir>/<episode>.export.json,
// gateway.Export) into a trajectory in Harbor's Agent Trajectory
// Interchange Format, ATIF-v1.7 (Harbor's rfcs/0001-trajectory-format.md).
//
// It owns the mapping — which record becomes which step, where token ids,
// logprobs and durations go — and reading the two files (ReadFiles). It
// must not write files (the caller says where the trajectory goes), and
// must not touch the episode machinery that writes records.
//
// The mapping (docs/protocol.md#atif-trajectories says it for users):
//
//   - each message record (a turn's user message) is a "user" step;
//   - each model call the gateway saw (its llm_response) is an "agent" step
//     with llm_call_count 1: the answer's text as message, the model, and
//     metrics — token counts, and the engine's prompt and completion token
//     ids and logprobs, from the record or else from the export's chains;
//   - each environment tool call the bridge saw (tool_call and its
//     tool_result, paired by call_id) is a tool call of the agent step of
//     the model call before it in the same turn, its result an observation
//     result of that step; tool calls with no model call before them in
//     the turn (a harness whose model calls the gateway did not see) get an
//     agent step of their own, without llm_call_count (not tracked);
//   - a harness's own account of a tool of its own (a tool_call whose name
//     is not one the environment served) is kept the same way, marked
//     extra.origin "harness"; its account of environment tools is left
//     out, the bridge's being the authoritative one;
//   - rewards, turn ends and errors go into the extra fields of the steps
//     they belong to; totals into final_metrics.
package atif

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/wire"
)

// SchemaVersion is the ATIF version this package writes.
const SchemaVersion = "ATIF-v1.7"

// Trajectory is ATIF's root object. Its fields and those of the types
// below are the spec's, named by their JSON names; the spec says what each
// means, and docs/protocol.md#atif-trajectories what harnessd puts there.
type Trajectory struct {
	SchemaVersion string         `json:"schema_version"`
	SessionID     string         `json:"session_id,omitempty"`
	TrajectoryID  string         `json:"trajectory_id,omitempty"`
	Agent         Agent          `json:"agent"`
	Steps         []Step         `json:"steps"`
	Notes         string         `json:"notes,omitempty"`
	FinalMetrics  *FinalMetrics  `json:"final_metrics,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// Agent is ATIF's AgentSchema: the agent system that ran.
type Agent struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	ModelName string `json:"model_name,omitempty"`
	// ToolDefinitions are the tools offered to the model in OpenAI's
	// function-calling form: the first Chat Completions request's tools.
	ToolDefinitions json.RawMessage `json:"tool_definitions,omitempty"`
	Extra           map[string]any  `json:"extra,omitempty"`
}

// FinalMetrics is ATIF's FinalMetricsSchema.
type FinalMetrics struct {
	TotalPromptTokens     *int           `json:"total_prompt_tokens,omitempty"`
	TotalCompletionTokens *int           `json:"total_completion_tokens,omitempty"`
	TotalSteps            int            `json:"total_steps"`
	Extra                 map[string]any `json:"extra,omitempty"`
}

// Step is ATIF's StepObject.
type Step struct {
	StepID       int            `json:"step_id"`
	Timestamp    string         `json:"timestamp,omitempty"`
	Source       string         `json:"source"`
	ModelName    string         `json:"model_name,omitempty"`
	Message      string         `json:"message"`
	Reasoning    string         `json:"reasoning_content,omitempty"`
	ToolCalls    []ToolCall     `json:"tool_calls,omitempty"`
	Observation  *Observation   `json:"observation,omitempty"`
	Metrics      *Metrics       `json:"metrics,omitempty"`
	LLMCallCount *int           `json:"llm_call_count,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

// ToolCall is ATIF's ToolCallSchema.
type ToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
	Extra        map[string]any  `json:"extra,omitempty"`
}

// Observation is ATIF's ObservationSchema.
type Observation struct {
	Results []Result `json:"results"`
}

// Result is ATIF's ObservationResultSchema.
type Result struct {
	SourceCallID string         `json:"source_call_id,omitempty"`
	Content      *string        `json:"content,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

// Metrics is ATIF's MetricsSchema for one model call.
type Metrics struct {
	PromptTokens       *int           `json:"prompt_tokens,omitempty"`
	CompletionTokens   *int           `json:"completion_tokens,omitempty"`
	PromptTokenIDs     []int          `json:"prompt_token_ids,omitempty"`
	CompletionTokenIDs []int          `json:"completion_token_ids,omitempty"`
	Logprobs           []float64      `json:"logprobs,omitempty"`
	Extra              map[string]any `json:"extra,omitempty"`
}

// Options are what the record does not say.
type Options struct {
	// AgentVersion is the agent system's version ("unknown" when empty):
	// harnessd does not learn a harness's version from its record.
	AgentVersion string
	// HarnessdVersion, when set, is noted in agent.extra.
	HarnessdVersion string
}

// converter is one conversion's state.
type converter struct {
	t       *Trajectory
	tools   map[string]bool // tools the environment served (reset)
	turn    int
	current int // index in t.Steps of the turn's open agent step; -1 none
	pending map[string]pendingCall
	byCall  map[int]int // gateway call index → step index
	first   float64
	last    float64
	toolMS  float64
	llmMS   float64
	nTools  int
	nLLM    int
	nCallID int
	// gateway says the record has model calls the gateway saw; without
	// any, the harness's own account of its model calls is used.
	gateway bool
	// ids rebuilds the gateway's calls' full prompt ids from the deltas
	// their llm_responses carry (parent_call_index, prompt_token_ids_from).
	ids wire.CallTokenIDs
}

type pendingCall struct {
	step int
	id   string
}

// Convert builds the trajectory of recs (one episode's record file, in
// order). ex, when not nil, is the episode's training export: it supplies
// token ids and logprobs a record's llm_response lacks, and the rewards.
func Convert(recs []wire.Record, ex *gateway.Export, opts Options) (*Trajectory, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("atif: an empty record")
	}
	if recs[0].Kind != wire.RecordReset {
		return nil, fmt.Errorf("atif: the record starts with a %q line, not a reset", recs[0].Kind)
	}
	if n := len(Episodes(recs)); n > 1 {
		return nil, fmt.Errorf("atif: the record holds %d episodes (an episode id reused appends); convert one at a time", n)
	}
	if ex != nil && ex.EpisodeID != recs[0].EpisodeID {
		return nil, fmt.Errorf("atif: the export is episode %q's, the record episode %q's", ex.EpisodeID, recs[0].EpisodeID)
	}
	version := opts.AgentVersion
	if version == "" {
		version = "unknown"
	}
	reset := recs[0]
	name := reset.Agent
	if name == "" {
		name = reset.Config
	}
	if name == "" {
		name = "unknown"
	}
	agentExtra := map[string]any{}
	for k, v := range map[string]string{"config": reset.Config, "adapter": reset.Adapter,
		"isolation": reset.Isolation, "harnessd_version": opts.HarnessdVersion} {
		if v != "" {
			agentExtra[k] = v
		}
	}
	if len(reset.Tools) > 0 {
		agentExtra["environment_tools"] = reset.Tools
	}
	c := &converter{
		t: &Trajectory{SchemaVersion: SchemaVersion, SessionID: reset.EpisodeID, TrajectoryID: reset.EpisodeID,
			Agent: Agent{Name: name, Version: version, Extra: agentExtra}, Steps: []Step{}},
		tools: map[string]bool{}, current: -1, pending: map[string]pendingCall{}, byCall: map[int]int{},
		first: reset.Time, last: reset.Time,
	}
	for _, n := range reset.Tools {
		c.tools[n] = true
	}
	for _, r := range recs {
		if r.Kind == wire.RecordEvent && r.Event != nil && r.Event.Type == wire.EventLLMResponse && r.Event.Origin == wire.OriginGateway {
			c.gateway = true
			break
		}
	}
	for i, r := range recs[1:] {
		if err := c.record(r); err != nil {
			return nil, fmt.Errorf("atif: record %d: %w", i+2, err)
		}
	}
	if ex != nil {
		c.export(ex)
	}
	c.finish()
	return c.t, nil
}

// Episodes splits a record file at its resets: an episode id reused
// appends a second episode to the same file. Lines before the first reset
// are dropped.
func Episodes(recs []wire.Record) [][]wire.Record {
	var out [][]wire.Record
	for _, r := range recs {
		if r.Kind == wire.RecordReset {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], r)
		}
	}
	return out
}

func (c *converter) record(r wire.Record) error {
	if r.Time > c.last {
		c.last = r.Time
	}
	switch r.Kind {
	case wire.RecordMessage:
		c.turn, c.current = r.Turn, -1
		msg := ""
		if r.Content != nil {
			msg = *r.Content
		}
		c.add(Step{Source: "user", Message: msg, Timestamp: stamp(r.Time), Extra: map[string]any{"turn": r.Turn}})
	case wire.RecordEvent:
		if r.Event == nil {
			return fmt.Errorf("an event record without an event")
		}
		return c.event(*r.Event)
	case wire.RecordObservation:
		if r.Observation == nil {
			return nil
		}
		o := r.Observation
		if i := c.lastAgent(); i >= 0 && r.Turn > 0 {
			if o.Reward != nil {
				c.t.Steps[i].Extra["reward"] = *o.Reward
			}
			c.t.Steps[i].Extra["done"] = o.Done
		}
	case wire.RecordReset:
		return fmt.Errorf("a second reset")
	}
	return nil
}

// lastAgent is the index of the last agent step of the current turn, or -1.
func (c *converter) lastAgent() int {
	for i := len(c.t.Steps) - 1; i >= 0; i-- {
		s := c.t.Steps[i]
		if s.Extra["turn"] != c.turn {
			return -1
		}
		if s.Source == "agent" {
			return i
		}
	}
	return -1
}

func (c *converter) add(s Step) int {
	s.StepID = len(c.t.Steps) + 1
	if s.Extra == nil {
		s.Extra = map[string]any{}
	}
	c.t.Steps = append(c.t.Steps, s)
	return len(c.t.Steps) - 1
}

// agentStep is the turn's open agent step, opened (without model call)
// when there is none.
func (c *converter) agentStep(ts float64) int {
	if c.current < 0 {
		c.current = c.add(Step{Source: "agent", Timestamp: stamp(ts), Extra: map[string]any{"turn": c.turn}})
	}
	return c.current
}

func (c *converter) event(e wire.Event) error {
	if e.Turn > 0 && e.Turn != c.turn {
		// Events of a turn without a message record (a record cut short
		// at its start): they belong to the turn they name.
		c.turn, c.current = e.Turn, -1
	}
	switch d := e.Data.(type) {
	case *wire.LLMResponse:
		if e.Origin == wire.OriginGateway || (!c.gateway && e.Origin == wire.OriginHarness) {
			c.llm(e, d) // a harness's own account only when the gateway saw none
		}
	case *wire.LLMRequest:
		var defs []json.RawMessage
		if e.Origin == wire.OriginGateway && d.Dialect == "openai-chat" && c.t.Agent.ToolDefinitions == nil &&
			json.Unmarshal(d.Tools, &defs) == nil && len(defs) > 0 {
			c.t.Agent.ToolDefinitions = d.Tools
		}
	case *wire.LLMChunk:
		if d.Thought && d.Content != "" {
			i := c.agentStep(e.Timestamp)
			c.t.Steps[i].Reasoning += d.Content
		}
	case *wire.ToolCall:
		if e.Origin == wire.OriginBridge || (e.Origin == wire.OriginHarness && !c.tools[d.ToolName]) {
			c.toolCall(e, d)
		}
	case *wire.ToolResult:
		if e.Origin == wire.OriginBridge || (e.Origin == wire.OriginHarness && !c.tools[d.ToolName]) {
			c.toolResult(e, d)
		}
	case *wire.TurnComplete:
		i := c.lastAgent()
		if i < 0 {
			i = c.agentStep(e.Timestamp)
		}
		s := &c.t.Steps[i]
		if s.Message == "" && c.byCallOf(i) == 0 {
			s.Message = d.Response // no model call of the turn: the harness's final text
		}
		tc := map[string]any{"response": d.Response, "done": d.Done}
		if d.Cancelled {
			tc["cancelled"] = true
		}
		s.Extra["turn_complete"] = tc
	case *wire.Error:
		i := c.agentStep(e.Timestamp)
		errs, _ := c.t.Steps[i].Extra["errors"].([]any)
		c.t.Steps[i].Extra["errors"] = append(errs, map[string]any{"message": d.Message,
			"recoverable": d.Recoverable, "origin": string(e.Origin)})
	}
	return nil
}

// byCallOf is the gateway call index of step i, or 0.
func (c *converter) byCallOf(i int) int {
	for k, v := range c.byCall {
		if v == i {
			return k
		}
	}
	return 0
}

func (c *converter) llm(e wire.Event, d *wire.LLMResponse) {
	s := Step{Source: "agent", Timestamp: stamp(e.Timestamp), ModelName: d.Model, Message: contentText(d.Content),
		Extra: map[string]any{"turn": c.turn, "origin": string(e.Origin)}}
	if e.Origin == wire.OriginGateway {
		one := 1 // the gateway saw exactly this call; a harness's account may sum several
		s.LLMCallCount = &one
	}
	if d.CallIndex > 0 {
		s.Extra["call_index"] = d.CallIndex
	}
	if c.t.Agent.ModelName == "" && d.Model != "" {
		c.t.Agent.ModelName = d.Model
	}
	m := &Metrics{Extra: map[string]any{}}
	if d.Usage != nil {
		p, q := d.Usage.PromptTokens, d.Usage.CompletionTokens
		m.PromptTokens, m.CompletionTokens = &p, &q
	}
	m.PromptTokenIDs, m.CompletionTokenIDs, m.Logprobs = d.PromptTokenIDs, d.CompletionTokenIDs, finite(d.Logprobs)
	if e.Origin == wire.OriginGateway && d.CallIndex > 0 {
		// A delta's prompt is its parent's ids and the new ones; a parent
		// the record lost (a turn's event bound) leaves the prompt to the
		// export.
		m.PromptTokenIDs = nil
		if err := c.ids.Add(d); err == nil {
			if p, ok := c.ids.Prompt(d.CallIndex); ok && len(p) > 0 {
				m.PromptTokenIDs = p
			}
		}
	}
	if d.LatencyMS != nil {
		m.Extra["latency_ms"] = *d.LatencyMS
		c.llmMS += *d.LatencyMS
	}
	for k, v := range map[string]string{"finish_reason": d.FinishReason, "dialect": d.Dialect,
		"traffic": d.Traffic, "error": d.Error} {
		if v != "" {
			m.Extra[k] = v
		}
	}
	if d.Status != 0 {
		m.Extra["status"] = d.Status
	}
	s.Metrics = m
	c.nLLM++
	c.current = c.add(s)
	if d.CallIndex > 0 {
		c.byCall[d.CallIndex] = c.current
	}
}

func (c *converter) toolCall(e wire.Event, d *wire.ToolCall) {
	i := c.agentStep(e.Timestamp)
	id := d.CallID
	if id == "" {
		c.nCallID++
		id = fmt.Sprintf("harnessd-call-%d", c.nCallID)
	}
	tc := ToolCall{ToolCallID: id, FunctionName: d.ToolName, Arguments: objectArgs(d.Arguments), Extra: map[string]any{"origin": string(e.Origin)}}
	if !isObject(d.Arguments) && len(d.Arguments) > 0 && string(d.Arguments) != "null" {
		tc.Extra["raw_arguments"] = d.Arguments
	}
	for k, v := range map[string]string{"server": d.Server, "upstream_name": d.UpstreamName, "tool_source": d.ToolSource} {
		if v != "" {
			tc.Extra[k] = v
		}
	}
	c.t.Steps[i].ToolCalls = append(c.t.Steps[i].ToolCalls, tc)
	c.nTools++
	if d.CallID != "" {
		c.pending[string(e.Origin)+"\x00"+d.CallID] = pendingCall{step: i, id: id}
	}
}

func (c *converter) toolResult(e wire.Event, d *wire.ToolResult) {
	i, id := -1, ""
	if p, ok := c.pending[string(e.Origin)+"\x00"+d.CallID]; ok && d.CallID != "" {
		i, id = p.step, p.id
		delete(c.pending, string(e.Origin)+"\x00"+d.CallID)
	} else {
		i = c.agentStep(e.Timestamp) // a result without its call: kept, unpaired
	}
	content := resultText(d.Result)
	r := Result{SourceCallID: id, Content: &content, Extra: map[string]any{"origin": string(e.Origin), "tool_name": d.ToolName}}
	if d.Error != nil {
		r.Extra["error"] = *d.Error
	}
	if d.DurationMS != nil {
		r.Extra["duration_ms"] = *d.DurationMS
		c.toolMS += *d.DurationMS
	}
	if d.StructuredContent != nil {
		r.Extra["structured_content"] = d.StructuredContent
	}
	s := &c.t.Steps[i]
	if s.Observation == nil {
		s.Observation = &Observation{Results: []Result{}}
	}
	s.Observation.Results = append(s.Observation.Results, r)
}

// export fills token ids and logprobs the record lacks from ex's chains,
// and notes the rewards and issues.
func (c *converter) export(ex *gateway.Export) {
	for _, ch := range ex.Chains {
		for _, sp := range ch.Spans {
			if sp.Kind != gateway.SpanCompletion || sp.Start < 0 || sp.End > len(ch.InputIDs) || sp.Start > sp.End {
				continue
			}
			i, ok := c.byCall[sp.CallIndex]
			if !ok {
				continue
			}
			m := c.t.Steps[i].Metrics
			if len(m.CompletionTokenIDs) == 0 {
				m.CompletionTokenIDs = slices.Clone(ch.InputIDs[sp.Start:sp.End])
			}
			if len(m.PromptTokenIDs) == 0 {
				m.PromptTokenIDs = slices.Clone(ch.InputIDs[:sp.Start])
			}
			if len(m.Logprobs) == 0 && sp.End <= len(ch.Logprobs) {
				lp := make([]float64, 0, sp.End-sp.Start)
				for _, p := range ch.Logprobs[sp.Start:sp.End] {
					if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
						lp = nil
						break
					}
					lp = append(lp, *p)
				}
				m.Logprobs = lp
			}
			m.Extra["chain"] = ch.ID
		}
	}
	if c.t.Extra == nil {
		c.t.Extra = map[string]any{}
	}
	c.t.Extra["export_format"] = ex.Format
	if len(ex.Rewards) > 0 {
		c.t.Extra["rewards"] = ex.Rewards
	}
	if len(ex.Issues) > 0 {
		c.t.Extra["export_issues"] = ex.Issues
	}
}

func (c *converter) finish() {
	fm := &FinalMetrics{TotalSteps: len(c.t.Steps), Extra: map[string]any{
		"duration_s": c.last - c.first, "turns": c.turn, "llm_calls": c.nLLM, "tool_calls": c.nTools,
		"tool_duration_ms": c.toolMS, "llm_latency_ms": c.llmMS,
	}}
	var p, q int
	seen := false
	for _, s := range c.t.Steps {
		if s.Metrics != nil && s.Metrics.PromptTokens != nil {
			p += *s.Metrics.PromptTokens
			q += *s.Metrics.CompletionTokens
			seen = true
		}
	}
	if seen {
		fm.TotalPromptTokens, fm.TotalCompletionTokens = &p, &q
	}
	c.t.FinalMetrics = fm
	c.t.Notes = "Converted by harnessd from the episode's record file" +
		map[bool]string{true: " and the gateway's training export", false: ""}[c.t.Extra["export_format"] != nil] +
		"; tool calls are the tool bridge's record, model calls the gateway's."
	// Drop the bookkeeping a consumer does not need to be empty, and the
	// metrics extra when nothing went into it.
	for i := range c.t.Steps {
		s := &c.t.Steps[i]
		if s.Metrics != nil && len(s.Metrics.Extra) == 0 {
			s.Metrics.Extra = nil
		}
	}
}

func stamp(unix float64) string {
	if unix <= 0 {
		return ""
	}
	sec, frac := math.Modf(unix)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

func isObject(b json.RawMessage) bool {
	for _, ch := range b {
		switch ch {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

func objectArgs(b json.RawMessage) json.RawMessage {
	if isObject(b) {
		return b
	}
	return json.RawMessage("{}")
}

// contentText is an llm_response's content as text: a string as it is,
// anything else (content blocks) as its JSON.
func contentText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func resultText(v any) string { return contentText(v) }

// finite is lp unless it holds a NaN or an infinity (not JSON numbers).
func finite(lp []float64) []float64 {
	for _, p := range lp {
		if math.IsNaN(p) || math.IsInf(p, 0) {
			return nil
		}
	}
	return lp
}

// ReadFiles reads a record file and the training export: the one named,
// else the one beside the record (<episode>.export.json) when there is one
// (an evaluation episode has none). ex is nil without an export. A record
// whose last line is cut short (a daemon killed while writing it) is read
// up to that line: its records come back with the export and an error
// wrapping the *wire.CutError, which a caller may take as a note.
func ReadFiles(record, export string) (recs []wire.Record, ex *gateway.Export, err error) {
	f, err := os.Open(record)
	if err != nil {
		return nil, nil, fmt.Errorf("atif: %w", err)
	}
	recs, err = wire.ReadRecords(f)
	f.Close()
	var cut *wire.CutError
	if errors.As(err, &cut) {
		cutErr := fmt.Errorf("atif: %s: %w", record, err)
		recs, ex, err := readExport(recs, record, export)
		if err != nil {
			return nil, nil, err
		}
		return recs, ex, cutErr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("atif: %s: %w", record, err)
	}
	return readExport(recs, record, export)
}

// readExport reads the export of ReadFiles, returned with recs.
func readExport(recs []wire.Record, record, export string) ([]wire.Record, *gateway.Export, error) {
	if def := strings.TrimSuffix(record, ".jsonl") + ".export.json"; export == "" && def != record {
		if _, err := os.Stat(def); err != nil {
			return recs, nil, nil
		}
		export = def
	}
	if export == "" {
		return recs, nil, nil
	}
	b, err := os.ReadFile(export)
	if err != nil {
		return nil, nil, fmt.Errorf("atif: reading the export: %w", err)
	}
	ex, err := DecodeExport(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", export, err)
	}
	return recs, ex, nil
}

// DecodeExport decodes a gateway training export file's bytes, refusing
// any other format.
func DecodeExport(b []byte) (*gateway.Export, error) {
	var ex gateway.Export
	if err := json.Unmarshal(b, &ex); err != nil {
		return nil, fmt.Errorf("atif: decoding the export: %w", err)
	}
	if ex.Format != gateway.ExportFormat {
		return nil, fmt.Errorf("atif: format %q, not the gateway's training export (%s)", ex.Format, gateway.ExportFormat)
	}
	return &ex, nil
}
