package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/wire"
)

// fakeEpisode describes an episode written as a record file in the exact
// format the session's recorder writes (wire.Record lines, encoded with
// wire.MarshalNoEscape), for the console's tests.
type fakeEpisode struct {
	id, task, agent string
	started         float64 // unix seconds
	turns           int
	turnSeconds     float64  // each turn's length
	reward          *float64 // the last observation's; nil: none
	done            bool
	errorType       wire.FailureType
	message         string  // each turn's message ("turn N: " before it)
	modelMS         float64 // each model call's latency (0: no model call)
	tokens          int     // each model call's total tokens
	tools           bool    // each turn calls add on both sides
	thinking        string  // each turn's thought chunk
	grade           *wire.TaskGrade
	changed         []string // each turn's workspace record (nil: none)
	texts           int      // each turn's text_output events before its response
}

func ptr[T any](v T) *T { return &v }

// write writes e's record file into dir.
func (e fakeEpisode) write(t *testing.T, dir string) {
	t.Helper()
	var buf bytes.Buffer
	put := func(r wire.Record) {
		b, err := wire.MarshalNoEscape(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	at := e.started
	put(wire.Record{Kind: wire.RecordReset, Time: at, EpisodeID: e.id, SessionID: "s-" + e.id, Config: "web-env",
		Agent: e.agent, Adapter: "jsonl", Isolation: "process", Tools: []string{"add"}})
	put(wire.Record{Kind: wire.RecordObservation, Time: at, Observation: &wire.Observation{Metadata: wire.Metadata{
		EpisodeID: e.id, TaskID: e.task, TaskInstruction: "Solve " + e.task + " <b>carefully</b>.",
		TaskMetadata: map[string]any{"difficulty": "easy"}, InjectedTools: []string{"add"}}}})
	ev := func(turn int, ts float64, origin wire.Origin, p wire.Payload) {
		x := wire.Event{Type: p.EventType(), Timestamp: ts, Data: p, Turn: turn, Origin: origin}
		put(wire.Record{Kind: wire.RecordEvent, Time: ts, Event: &x})
	}
	call := 0
	for n := 1; n <= e.turns; n++ {
		start := at + float64(n-1)*e.turnSeconds
		msg := fmt.Sprintf("turn %d: %s", n, e.message)
		put(wire.Record{Kind: wire.RecordMessage, Time: start, Turn: n, Content: &msg})
		if e.thinking != "" {
			ev(n, start+0.01, wire.OriginHarness, &wire.LLMChunk{Content: e.thinking, Thought: true})
		}
		if e.modelMS > 0 {
			call++
			ev(n, start+0.02, wire.OriginGateway, &wire.LLMRequest{Model: "m", CallIndex: call, Dialect: "openai-chat"})
			ev(n, start+0.02+e.modelMS/1000, wire.OriginGateway, &wire.LLMResponse{Content: fmt.Sprintf("answer %d", call), Model: "m",
				CallIndex: call, Usage: &wire.TokenUsage{PromptTokens: e.tokens / 2, CompletionTokens: e.tokens - e.tokens/2, TotalTokens: e.tokens},
				LatencyMS: ptr(e.modelMS), Traffic: "training"})
		}
		if e.tools {
			args := json.RawMessage(`{"b":3,"a":2}`)
			ev(n, start+0.1, wire.OriginHarness, &wire.ToolCall{ToolName: "mcp__harnessd__add", Arguments: args, CallID: "toolu_1"})
			ev(n, start+0.11, wire.OriginBridge, &wire.ToolCall{ToolName: "add", Arguments: json.RawMessage(`{"a":2,"b":3}`), CallID: "7"})
			ev(n, start+0.13, wire.OriginBridge, &wire.ToolResult{ToolName: "add", Result: "5", CallID: "7", DurationMS: ptr(20.0)})
			ev(n, start+0.15, wire.OriginHarness, &wire.ToolResult{ToolName: "mcp__harnessd__add", Result: "5", CallID: "toolu_1"})
		}
		for i := range e.texts {
			ev(n, start+0.2, wire.OriginHarness, &wire.TextOutput{Text: fmt.Sprintf("line %d", i)})
		}
		resp := fmt.Sprintf("response %d of %s", n, e.id)
		ev(n, start+e.turnSeconds-0.01, wire.OriginHarness, &wire.TextOutput{Text: resp})
		last := n == e.turns
		o := &wire.Observation{Metadata: wire.Metadata{EpisodeID: e.id, TurnNumber: n, Response: &resp}}
		if last {
			o.Reward, o.Done, o.Metadata.ErrorType = e.reward, e.done || e.errorType != "", e.errorType
			if e.errorType != "" {
				o.Metadata.Error = "the turn ran out of time"
			}
			if e.task != "" {
				o.Metadata.TaskID, o.Metadata.Grade = e.task, e.grade
			}
		}
		put(wire.Record{Kind: wire.RecordObservation, Time: start + e.turnSeconds, Turn: n, Observation: o})
		if e.changed != nil {
			put(wire.Record{Kind: wire.RecordWorkspace, Time: start + e.turnSeconds, Turn: n,
				Workspace: &wire.WorkspaceChanges{Changed: e.changed, Walked: 12}})
		}
	}
	if err := os.WriteFile(recordfile.Record(dir, e.id), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeFakeExport writes a training export of two calls of episode id, in
// the gateway's format (gateway.Export encoded as episode.writeExport
// does): call 1's prompt [101 102 103 104] and completion [201 202], call
// 2's added prompt [105] and completion [203 204 205].
func writeFakeExport(t *testing.T, dir, id string) {
	t.Helper()
	lp := func(v float64) *float64 { return &v }
	ex := gateway.Export{Format: gateway.ExportFormat, EpisodeID: id, Traffic: gateway.TrafficTraining,
		Calls: []gateway.ExportCall{
			{CallIndex: 1, Turn: 1, Dialect: "openai-chat", Traffic: gateway.TrafficTraining, Chain: 1, PromptTokens: 4, CompletionTokens: 2, FinishReason: "stop", LatencyMS: 40},
			{CallIndex: 2, Turn: 2, Dialect: "openai-chat", Traffic: gateway.TrafficTraining, Chain: 1, Parent: 1, PromptTokens: 7, CompletionTokens: 3, FinishReason: "stop", LatencyMS: 40},
		},
		Chains: []gateway.Chain{{ID: 1, Calls: []int{1, 2}, PromptLength: 4,
			InputIDs: []int{101, 102, 103, 104, 201, 202, 105, 203, 204, 205},
			LossMask: []int{0, 0, 0, 0, 1, 1, 0, 1, 1, 1},
			Logprobs: []*float64{nil, nil, nil, nil, lp(-0.25), lp(-1.5), nil, lp(-0.125), lp(-0.5), lp(-2)},
			Spans: []gateway.Span{
				{Start: 0, End: 4, Kind: gateway.SpanPrompt, CallIndex: 1, Turn: 1},
				{Start: 4, End: 6, Kind: gateway.SpanCompletion, CallIndex: 1, Turn: 1},
				{Start: 6, End: 7, Kind: gateway.SpanPrompt, CallIndex: 2, Turn: 2},
				{Start: 7, End: 10, Kind: gateway.SpanCompletion, CallIndex: 2, Turn: 2},
			}}},
		Rewards: []gateway.Reward{{Turn: 2, Reward: 1}}, Issues: []gateway.Issue{}}
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recordfile.Export(dir, id), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// thousandEpisodes writes n episodes ep-0000… into dir: task-(i%5), reward
// (i%10)/10 except every 50th (incomplete: no reward, not done), error type
// turn_timeout for i%7 == 6, "needle" in the message of i%100 == 42.
func thousandEpisodes(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		e := fakeEpisode{id: fmt.Sprintf("ep-%04d", i), task: fmt.Sprintf("task-%d", i%5), agent: "agent-" + string(rune('a'+i%3)),
			started: 1.7e9 + float64(i)*60, turns: 1 + i%3, turnSeconds: 2, done: true, message: "solve it",
			modelMS: 100, tokens: 1000 + i, tools: i%2 == 0}
		if i%50 != 0 {
			e.reward = ptr(float64(i%10) / 10)
		} else {
			e.done = false
		}
		if i%7 == 6 {
			e.errorType = wire.FailureTurnTimeout
		}
		if i%100 == 42 {
			e.message = "find the needle"
		}
		e.write(t, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "ep-0000.jsonl")); err != nil {
		t.Fatal(err)
	}
}
