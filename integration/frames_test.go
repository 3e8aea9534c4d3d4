package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/wire"
)

// growingFrames is one episode of a growing conversation through the real
// daemon: every turn the test agent's llm directive calls the episode's
// gateway (engine upstream: the fake engine) with its whole chat so far and
// one new user message, so each call's prompt extends the previous call's
// prompt and completion.
type growingFrames struct {
	frames   [][]byte       // the step replies, as the client read them
	events   []wire.Event   // the gateway's llm_responses, in frame order
	requests []wire.Event   // the gateway's llm_requests, in frame order
	export   gateway.Export // the episode's training export
	record   int64          // the bytes of the episode's record file (0: no record_dir)
}

// growingDaemon starts a daemon whose harness is the test agent with the
// fake engine as its model upstream, recording to recordDir.
func growingDaemon(tb testing.TB, recordDir string, flags ...string) *daemon {
	tb.Helper()
	y := fmt.Sprintf("name: frames\nrecord_dir: %q\nharness:\n  command: [%q, agent]\n  model: {url: %q, name: frames-model, upstream: engine}\n",
		recordDir, testharnessBin(tb), fakeLLM(tb)+"/v1")
	// Two sessions: the episode with deltas and the one with full ids, the
	// first's session possibly still closing when the second connects.
	return startDaemon(tb, spec{Flags: append([]string{"--config", writeConfig(tb, y), "--max-sessions", "2"}, flags...)})
}

// runGrowing runs one episode of turns llm turns on a fresh /ws
// connection; reset is the reset's data (nil: none). A last reset ends the
// episode, which closes its record in recordDir.
func runGrowing(tb testing.TB, d *daemon, recordDir string, turns int, reset map[string]any) growingFrames {
	tb.Helper()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws://"+d.Addr+"/ws", nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	frame, _ := json.Marshal(map[string]any{"type": "reset", "data": reset})
	r := wsRoundTrip(tb, ctx, c, frame)
	var opened struct {
		Data wire.Observation `json:"data"`
	}
	if err := json.Unmarshal(r, &opened); err != nil || opened.Data.Metadata.EpisodeID == "" {
		tb.Fatalf("reset: %v: %s", err, r)
	}
	var g growingFrames
	for i := range turns {
		step, _ := json.Marshal(stepFrame(fmt.Sprintf("llm step %d: look at the code and fix what is wrong", i)))
		reply := wsRoundTrip(tb, ctx, c, step)
		var f struct {
			Type string           `json:"type"`
			Data wire.Observation `json:"data"`
		}
		if err := json.Unmarshal(reply, &f); err != nil || f.Type != "observation" {
			tb.Fatalf("turn %d: %v: %.300s", i+1, err, reply)
		}
		if r := f.Data.Metadata.Response; f.Data.Metadata.ErrorType != "" || r == nil || !strings.HasPrefix(*r, "llm: ") {
			tb.Fatalf("turn %d: %.500s", i+1, reply)
		}
		n := 0
		for _, e := range f.Data.Metadata.TurnEvents {
			if e.Type == wire.EventLLMRequest && e.Origin == wire.OriginGateway {
				g.requests = append(g.requests, e)
			}
			if e.Type == wire.EventLLMResponse && e.Origin == wire.OriginGateway {
				g.events = append(g.events, e)
				n++
			}
		}
		if n != 1 {
			tb.Fatalf("turn %d: %d llm_responses of the gateway, want 1", i+1, n)
		}
		g.frames = append(g.frames, reply)
	}
	reply := wsRoundTrip(tb, ctx, c, []byte(`{"type":"export"}`))
	var ex struct {
		Type string         `json:"type"`
		Data gateway.Export `json:"data"`
	}
	if err := json.Unmarshal(reply, &ex); err != nil || ex.Type != "export" {
		tb.Fatalf("export: %v: %.300s", err, reply)
	}
	g.export = ex.Data
	if r := wsRoundTrip(tb, ctx, c, []byte(`{"type":"reset"}`)); !strings.Contains(string(r), `"observation"`) {
		tb.Fatalf("last reset: %s", r)
	}
	st, err := os.Stat(filepath.Join(recordDir, opened.Data.Metadata.EpisodeID+".jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	g.record = st.Size()
	return g
}

// checkGrowing checks that the delta events of run rebuild exactly the full
// ids of full (the same conversation with full_token_ids) and the export's
// one chain, and that every call after the first was sent as a delta.
func checkGrowing(tb testing.TB, run, full growingFrames) {
	tb.Helper()
	var ids wire.CallTokenIDs
	if err := ids.AddEvents(run.events); err != nil {
		tb.Fatal(err)
	}
	if m := ids.Missing(); len(m) > 0 {
		tb.Fatalf("parents %v never arrived", m)
	}
	if len(run.events) != len(full.events) {
		tb.Fatalf("%d vs %d calls", len(run.events), len(full.events))
	}
	for i, e := range run.events {
		d, f := e.Data.(*wire.LLMResponse), full.events[i].Data.(*wire.LLMResponse)
		if d.CallIndex != i+1 || f.CallIndex != i+1 {
			tb.Fatalf("call indices %d, %d at position %d", d.CallIndex, f.CallIndex, i)
		}
		if i > 0 && (d.ParentCallIndex != i || d.PromptTokenIDsFrom == 0 || d.PromptTokenIDsFrom >= len(f.PromptTokenIDs)) {
			tb.Errorf("call %d: parent %d, prompt ids from %d (of %d): not a delta from the call before", i+1, d.ParentCallIndex, d.PromptTokenIDsFrom, len(f.PromptTokenIDs))
		}
		if f.PromptTokenIDsFrom != 0 || (i > 0 && f.ParentCallIndex != i) {
			tb.Errorf("call %d with full_token_ids: from %d, parent %d", i+1, f.PromptTokenIDsFrom, f.ParentCallIndex)
		}
		p, _ := ids.Prompt(d.CallIndex)
		if !slices.Equal(p, f.PromptTokenIDs) || !slices.Equal(d.CompletionTokenIDs, f.CompletionTokenIDs) {
			tb.Errorf("call %d: rebuilt %d prompt ids differ from the full %d", i+1, len(p), len(f.PromptTokenIDs))
		}
	}
	var msgs wire.CallMessages
	if err := msgs.AddEvents(run.requests); err != nil {
		tb.Fatal(err)
	}
	if len(run.requests) != len(full.requests) || len(msgs.Missing()) > 0 {
		tb.Fatalf("%d vs %d llm_requests, missing bases %v", len(run.requests), len(full.requests), msgs.Missing())
	}
	for i, e := range run.requests {
		d, f := e.Data.(*wire.LLMRequest), full.requests[i].Data.(*wire.LLMRequest)
		if i > 0 && (d.MessagesCallIndex != i || d.MessagesFrom != 2*i-1) {
			tb.Errorf("call %d: messages from %d of call %d: not a delta from the call before", i+1, d.MessagesFrom, d.MessagesCallIndex)
		}
		if f.MessagesFrom != 0 {
			tb.Errorf("call %d with full_token_ids: messages from %d", i+1, f.MessagesFrom)
		}
		m, _ := msgs.Messages(d.CallIndex)
		var a, b bytes.Buffer
		if json.Compact(&a, m) != nil || json.Compact(&b, f.Messages) != nil || a.String() != b.String() {
			tb.Errorf("call %d: rebuilt messages differ from the full ones:\n%s\n%s", i+1, m, f.Messages)
		}
	}
	for _, ex := range []gateway.Export{run.export, full.export} {
		if len(ex.Chains) != 1 {
			tb.Fatalf("the export has %d chains, want 1", len(ex.Chains))
		}
		last := len(run.events)
		p, _ := ids.Prompt(last)
		cmp, _ := ids.Completion(last)
		if !slices.Equal(ex.Chains[0].InputIDs, append(slices.Clone(p), cmp...)) {
			tb.Errorf("the export's chain (%d ids) is not the last call's rebuilt prompt+completion (%d+%d)", len(ex.Chains[0].InputIDs), len(p), len(cmp))
		}
	}
}

// TestObservationFramesCarryDeltas (issue 28): over a growing
// conversation through the real daemon, each observation frame's
// llm_response carries only the prompt ids after its parent call's, the
// deltas rebuild exactly what the same conversation with full_token_ids
// carries and the export's chain, and the frame at the last turn stays
// within 2× the first's (with full ids it grows with the conversation:
// the control that the conversation does grow).
func TestObservationFramesCarryDeltas(t *testing.T) {
	t.Parallel()
	const turns = 40
	dir := t.TempDir()
	d := growingDaemon(t, dir)
	run := runGrowing(t, d, dir, turns, nil)
	full := runGrowing(t, d, dir, turns, map[string]any{"full_token_ids": true})
	checkGrowing(t, run, full)
	first, last := len(run.frames[0]), len(run.frames[turns-1])
	ffirst, flast := len(full.frames[0]), len(full.frames[turns-1])
	if last > 2*first {
		t.Errorf("frame at turn %d is %d B, turn 1's %d B: more than 2×", turns, last, first)
	}
	if flast < 3*ffirst {
		t.Errorf("with full ids the frame at turn %d is %d B, turn 1's %d B: the conversation did not grow", turns, flast, ffirst)
	}
	t.Logf("frames: deltas %d → %d B, full ids %d → %d B; records %d B vs %d B", first, last, ffirst, flast, run.record, full.record)
	if run.record == 0 || 2*run.record > full.record {
		t.Errorf("the record with deltas is %d B, with full ids %d B: not under half", run.record, full.record)
	}
}

// BenchmarkObservationFrames (issue 28, "observation frames at turn 300
// within 2× those at turn 1"): the /ws observation frame's bytes at turn 1
// and turn 300 of a growing conversation (the test agent's llm directive
// through the gateway to the fake engine), by default (ids as deltas from
// the parent call) and, in the same run, with full_token_ids (what every
// frame carried before). Median of 3 episodes, each on a fresh daemon,
// with the spread; each episode's deltas are checked to rebuild the full
// run's ids and the export.
//
// Each run takes three pairs of episodes whatever b.N: run it with
// -benchtime 1x.
func BenchmarkObservationFrames(b *testing.B) {
	const turns = 300
	var first, last, ratio, ffirst, flast, fratio, rec, frec []float64
	for range repeats {
		dir := b.TempDir()
		d := growingDaemon(b, dir, infoLog...)
		run := runGrowing(b, d, dir, turns, nil)
		full := runGrowing(b, d, dir, turns, map[string]any{"full_token_ids": true})
		checkGrowing(b, run, full)
		f, l := float64(len(run.frames[0])), float64(len(run.frames[turns-1]))
		ff, fl := float64(len(full.frames[0])), float64(len(full.frames[turns-1]))
		first, last, ratio = append(first, f), append(last, l), append(ratio, l/f)
		ffirst, flast, fratio = append(ffirst, ff), append(flast, fl), append(fratio, fl/ff)
		rec, frec = append(rec, float64(run.record)/1e3), append(frec, float64(full.record)/1e3)
		d.Stop()
	}
	fs, ls, rs := spreadOf(first), spreadOf(last), spreadOf(ratio)
	ffs, fls, frs := spreadOf(ffirst), spreadOf(flast), spreadOf(fratio)
	rs2, frs2 := spreadOf(rec), spreadOf(frec)
	b.ReportMetric(rs.Med, "turn300/turn1")
	summary("observation frames of a growing conversation (%d turns, one gateway call each): ids as deltas %s B at turn 1, %s B at turn %d → %s (target ≤ 2) | full_token_ids %s B at turn 1, %s B at turn %d → %s; the episode's record file %s kB with deltas, %s kB with full_token_ids; %d episodes each",
		turns, fs.Format("%.0f"), ls.Format("%.0f"), turns, rs.Format("%.2f"), ffs.Format("%.0f"), fls.Format("%.0f"), turns, frs.Format("%.2f"),
		rs2.Format("%.0f"), frs2.Format("%.0f"), repeats)
	row(fmt.Sprintf("observation frame at turn %d vs turn 1 of a growing conversation", turns),
		ls.Format("%.0f")+" B", fs.Format("%.0f")+" B (turn 1, same run)", rs.Format("%.2f"), "≤ 2×", verdict(rs, 2, true))
}
