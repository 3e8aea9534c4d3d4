package atif_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/internal/atif"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// startEngine runs the fake LLM in engine mode (token ids and logprobs, as
// vLLM answers) on 127.0.0.1 and returns its root URL.
func startEngine(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, testbin.Path(t, "testharness"), "llm", "--engine", "--addr", "127.0.0.1:0", "--quiet")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
	if err != nil || !ok {
		t.Fatalf("the fake LLM did not listen: %q %v\n%s", line, err, stderr.String())
	}
	return url
}

// recordEpisode runs a real two-turn episode through bin/harnessd run: the
// fake agent calls the model through the gateway (engine upstream, so
// with token ids), calls environment tools through the bridge (one of
// them failing), and ends the task. It returns the record directory.
func recordEpisode(t *testing.T) string {
	t.Helper()
	th := testbin.Path(t, "testharness")
	url := startEngine(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbin.Path(t, "harnessd"), "run", "--isolation", "process",
		"--record-dir", dir, "--episode-id", "ep-atif",
		"--model-url", url+"/v1", "--model", "engine-model", "--model-upstream", "engine",
		"--tool", "stdio:"+th+" tools",
		"-m", `llm what is 2+3?;;tool add {"a":2,"b":3};;llm it is 5`,
		"-m", `tool echo {"text":"hi there"};;tool crash {"code":4};;done`,
		"--", th, "agent")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("harnessd run: %v\n%s", err, stderr.String())
	}
	return dir
}

func readRecord(t *testing.T, path string) []wire.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := wire.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func readExport(t *testing.T, path string) *gateway.Export {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ex gateway.Export
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	return &ex
}

// A real record, converted by harnessd export, validates against the
// ATIF schema and holds every tool call the bridge recorded, with its
// arguments and its result, and every model call with its token ids and
// logprobs.
func TestExportOfARealRecordValidatesAndRoundTrips(t *testing.T) {
	dir := recordEpisode(t)
	record := filepath.Join(dir, "ep-atif.jsonl")
	if _, err := os.Stat(filepath.Join(dir, "ep-atif.export.json")); err != nil {
		t.Fatalf("no training export beside the record: %v", err)
	}
	out := filepath.Join(t.TempDir(), "trajectory.json")
	cmd := exec.Command(testbin.Path(t, "harnessd"), "export", "--format", "atif", record, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("harnessd export: %v\n%s", err, b)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if p := validate(t, doc); len(p) != 0 {
		t.Fatalf("the trajectory does not validate:\n%s\n%s", strings.Join(p, "\n"), doc)
	}
	var tr docTrajectory
	if err := json.Unmarshal(doc, &tr); err != nil {
		t.Fatal(err)
	}
	if tr.SchemaVersion != atif.SchemaVersion {
		t.Errorf("schema_version %q", tr.SchemaVersion)
	}
	recs := readRecord(t, record)
	checkRoundTrip(t, recs, tr)
}

// checkRoundTrip: every bridge tool_call of recs is a tool call of some
// step with the same id, name and arguments, and its tool_result is that
// step's observation result for it; every gateway llm_response's token ids
// and logprobs are its step's metrics.
func checkRoundTrip(t *testing.T, recs []wire.Record, tr docTrajectory) {
	t.Helper()
	type found struct {
		step int
		name string
		args json.RawMessage
	}
	calls := map[string]found{}
	results := map[string]any{}
	for _, s := range tr.Steps {
		for _, c := range s.ToolCalls {
			calls[c.ID] = found{s.StepID, c.Name, c.Arguments}
		}
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				if r.SourceCallID != nil {
					results[*r.SourceCallID] = r.Content
				}
			}
		}
	}
	var nCalls, nResults, nLLM, deltas int
	var events []wire.Event
	for _, r := range recs {
		if r.Kind == wire.RecordEvent && r.Event != nil {
			events = append(events, *r.Event)
		}
	}
	prompts, err := wire.FullPromptIDs(events)
	if err != nil {
		t.Fatalf("the record's llm_responses: %v", err)
	}
	for _, r := range recs {
		if r.Kind != wire.RecordEvent || r.Event == nil {
			continue
		}
		e := r.Event
		switch d := e.Data.(type) {
		case *wire.ToolCall:
			if e.Origin != wire.OriginBridge {
				continue
			}
			nCalls++
			f, ok := calls[d.CallID]
			if !ok {
				t.Errorf("bridge tool call %s %s is in no step", d.CallID, d.ToolName)
				continue
			}
			if f.name != d.ToolName || !jsonEqual(t, f.args, d.Arguments) {
				t.Errorf("tool call %s: %s %s in the trajectory, %s %s in the record", d.CallID, f.name, f.args, d.ToolName, d.Arguments)
			}
		case *wire.ToolResult:
			if e.Origin != wire.OriginBridge {
				continue
			}
			nResults++
			got, ok := results[d.CallID]
			if !ok {
				t.Errorf("bridge tool result %s %s is in no observation", d.CallID, d.ToolName)
				continue
			}
			want := d.Result
			if _, isString := want.(string); !isString && want != nil {
				b, _ := json.Marshal(want)
				want = string(b)
			}
			if want == nil {
				want = ""
			}
			if got != want {
				t.Errorf("tool result %s: %#v in the trajectory, %#v in the record", d.CallID, got, want)
			}
		case *wire.LLMResponse:
			if e.Origin != wire.OriginGateway {
				continue
			}
			nLLM++
			s := stepOfCall(tr, d.CallIndex)
			if s == nil || s.Metrics == nil {
				t.Errorf("model call %d is in no step with metrics", d.CallIndex)
				continue
			}
			m := s.Metrics
			if d.PromptTokenIDsFrom > 0 {
				deltas++
			}
			if !reflect.DeepEqual(m.PromptTokenIDs, prompts[d.CallIndex]) || !reflect.DeepEqual(m.CompletionTokenIDs, d.CompletionTokenIDs) ||
				!reflect.DeepEqual(m.Logprobs, d.Logprobs) {
				t.Errorf("model call %d: token ids or logprobs differ from the record", d.CallIndex)
			}
			if d.Usage != nil && (m.PromptTokens == nil || *m.PromptTokens != d.Usage.PromptTokens || *m.CompletionTokens != d.Usage.CompletionTokens) {
				t.Errorf("model call %d: token counts differ from the record", d.CallIndex)
			}
		}
	}
	// The episode made three environment tool calls and two model calls,
	// the second extending the first (its record carries a delta the
	// trajectory rebuilt); a record without them would make this test pass
	// without testing.
	if deltas != 1 {
		t.Errorf("%d model calls carry their prompt as a delta from their parent, want 1", deltas)
	}
	if nCalls != 3 || nResults != 3 || nLLM != 2 {
		t.Errorf("the record holds %d bridge tool calls, %d results, %d model calls; want 3, 3, 2", nCalls, nResults, nLLM)
	}
	for _, r := range recs {
		if r.Kind == wire.RecordEvent && r.Event.Type == wire.EventLLMResponse && r.Event.Origin == wire.OriginGateway {
			if len(r.Event.Data.(*wire.LLMResponse).CompletionTokenIDs) == 0 {
				t.Errorf("the engine's answer in the record has no token ids")
			}
		}
	}
}

func stepOfCall(tr docTrajectory, callIndex int) *docStep {
	for i, s := range tr.Steps {
		if v, ok := s.Extra["call_index"].(float64); ok && int(v) == callIndex {
			return &tr.Steps[i]
		}
	}
	return nil
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// Token ids a record lacks (a record written without them) come from the
// gateway's training export: the chain's tokens before the call's
// completion span are its prompt, the span its completion and logprobs.
func TestTokenIDsFromTheTrainingExport(t *testing.T) {
	dir := recordEpisode(t)
	recs := readRecord(t, filepath.Join(dir, "ep-atif.jsonl"))
	ex := readExport(t, filepath.Join(dir, "ep-atif.export.json"))
	full, err := atif.Convert(recs, nil, atif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stripped := readRecord(t, filepath.Join(dir, "ep-atif.jsonl"))
	n := 0
	for _, r := range stripped {
		if r.Kind == wire.RecordEvent && r.Event.Type == wire.EventLLMResponse {
			d := r.Event.Data.(*wire.LLMResponse)
			d.PromptTokenIDs, d.CompletionTokenIDs, d.Logprobs = nil, nil, nil
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d model calls in the record, want 2", n)
	}
	without, err := atif.Convert(stripped, nil, atif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	withExport, err := atif.Convert(stripped, ex, atif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range full.Steps {
		if s.Metrics == nil {
			continue
		}
		if w := without.Steps[i].Metrics; len(w.CompletionTokenIDs) != 0 || len(w.PromptTokenIDs) != 0 {
			t.Fatalf("step %d has token ids from a record without them", s.StepID)
		}
		e := withExport.Steps[i].Metrics
		if !reflect.DeepEqual(e.PromptTokenIDs, s.Metrics.PromptTokenIDs) || !reflect.DeepEqual(e.CompletionTokenIDs, s.Metrics.CompletionTokenIDs) ||
			!reflect.DeepEqual(e.Logprobs, s.Metrics.Logprobs) {
			t.Errorf("step %d: the export's ids differ from the record's:\nexport %v %v %v\nrecord %v %v %v", s.StepID,
				e.PromptTokenIDs, e.CompletionTokenIDs, e.Logprobs, s.Metrics.PromptTokenIDs, s.Metrics.CompletionTokenIDs, s.Metrics.Logprobs)
		}
	}
	b, err := json.Marshal(withExport)
	if err != nil {
		t.Fatal(err)
	}
	if p := validate(t, b); len(p) != 0 {
		t.Errorf("does not validate: %v", p)
	}
}
