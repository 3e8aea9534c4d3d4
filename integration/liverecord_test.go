package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/wire"
)

// liveAdapter is one adapter driving the test agent in its protocol.
type liveAdapter struct {
	name    string
	harness string // the YAML of the harness section's fields
}

// liveAdapters are the five adapters, each with the test agent speaking its
// protocol.
func liveAdapters(t *testing.T) []liveAdapter {
	th := testharnessBin(t)
	return []liveAdapter{
		{"jsonl", fmt.Sprintf("adapter: jsonl\n  command: [%q, agent]", th)},
		{"acp", fmt.Sprintf("adapter: acp\n  command: [%q, agent, --protocol, acp]", th)},
		{"stream-json", fmt.Sprintf("adapter: claude\n  command: [%q, agent, --protocol, stream-json]", th)},
		{"pty", fmt.Sprintf("adapter: pty\n  command: [%q, agent, --protocol, tui]\n  options: {prompt: 'testharness> '}", th)},
		{"oneshot", fmt.Sprintf("adapter: exec\n  command: [%q, agent]\n  options:\n    format: text\n"+
			"    first_command: [%q, agent, --protocol, oneshot, --format, text, --, '{message}']\n"+
			"    command: [%q, agent, --protocol, oneshot, --format, text, --resume, '{session_id}', --, '{message}']\n"+
			"    session_regex: 'session id: (\\S+)'", th, th, th)},
	}
}

// liveConfig is an environment of adapter a recording to recordDir (""
// for none: the daemon's --record-dir then says).
func liveConfig(t *testing.T, a liveAdapter, recordDir string) string {
	y := fmt.Sprintf("name: live-%s\nharness:\n  %s\n", a.name, a.harness)
	if recordDir != "" {
		y += fmt.Sprintf("record_dir: %q\n", recordDir)
	}
	return writeConfig(t, y)
}

// feedRecord is a record message of the console's live feed.
type feedRecord struct {
	Type   string       `json:"type"`
	Record *wire.Record `json:"record"`
}

// liveFeed reads the console's live feed (/web/api/events, server-sent
// events) of d until the test ends; its record messages arrive on the
// channel.
func liveFeed(t *testing.T, d *daemon) <-chan wire.Record {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+"/web/api/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("the console's feed: %v", err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("the console's feed: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ch := make(chan wire.Record, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			b, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m feedRecord
			if json.Unmarshal([]byte(b), &m) != nil || m.Type != "record" || m.Record == nil {
				continue
			}
			select {
			case ch <- *m.Record:
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		res.Body.Close()
		<-done
	})
	// The feed is subscribed once its first message (the session list) is
	// sent; a reset after this returns is seen.
	return ch
}

// saidText reports whether e says text: a text_output with a line that is
// text, or an llm_chunk of it (ACP streams the agent's message as chunks).
func saidText(e *wire.Event, text string) bool {
	if e == nil {
		return false
	}
	var said string
	switch d := e.Data.(type) {
	case *wire.TextOutput:
		said = d.Text
	case *wire.LLMChunk:
		said = d.Content
	}
	for _, l := range strings.Split(said, "\n") {
		if strings.TrimSpace(l) == text {
			return true
		}
	}
	return false
}

// readRecordLines reads a record file line by line; the last line may be
// cut short (a daemon killed while writing it), and is then returned apart.
func readRecordLines(t *testing.T, path string) (recs []wire.Record, cut string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	for i, l := range lines {
		if len(l) == 0 {
			continue
		}
		var r wire.Record
		if err := json.Unmarshal(l, &r); err != nil {
			if i == len(lines)-1 && !bytes.HasSuffix(l, []byte("\n")) {
				return recs, string(l)
			}
			t.Fatalf("%s: line %d does not decode: %v: %.200s", path, i+1, err, l)
		}
		recs = append(recs, r)
	}
	return recs, ""
}

// waitRecorded waits until the record file at path holds an event saying
// text, and returns its records.
func waitRecorded(t *testing.T, path, text string) []wire.Record {
	t.Helper()
	deadline := time.Now().Add(frameTimeout)
	for {
		recs, _ := readRecordLines(t, path)
		for _, r := range recs {
			if r.Kind == wire.RecordEvent && saidText(r.Event, text) {
				return recs
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("the record file holds no event saying %q %s into the turn: %d records:\n%s", text, frameTimeout, len(recs), b)
		}
		time.Sleep(10 * time.Millisecond) // polling the file: what is waited for is its content
	}
}

// waitFed waits until the feed brings an event record saying text.
func waitFed(t *testing.T, feed <-chan wire.Record, text string) {
	t.Helper()
	timeout := time.After(frameTimeout)
	for {
		select {
		case r, ok := <-feed:
			if !ok {
				t.Fatal("the console's feed ended")
			}
			if r.Kind == wire.RecordEvent && saidText(r.Event, text) {
				return
			}
		case <-timeout:
			t.Fatalf("the console's feed brought no event saying %q within %s", text, frameTimeout)
		}
	}
}

// noObservationOf fails when recs hold the observation of turn n.
func noObservationOf(t *testing.T, recs []wire.Record, n int) {
	t.Helper()
	for _, r := range recs {
		if r.Kind == wire.RecordObservation && r.Turn == n {
			t.Fatalf("the record holds turn %d's observation while the turn should be running", n)
		}
	}
}

// TestLiveWithinATurn: for every adapter a turn's first event is in the
// record file and on the console's live feed (the real HTTP feed) while the
// turn runs: the test agent says its first line and then waits for a file
// the test creates only after it saw that line in both places.
func TestLiveWithinATurn(t *testing.T) {
	for _, a := range liveAdapters(t) {
		t.Run(a.name, func(t *testing.T) {
			rec, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
			d := startDaemon(t, spec{Flags: append([]string{"--config", liveConfig(t, a, rec)}, isolationProcess...)})
			feed := liveFeed(t, d)
			w := dialRaw(t, d, "/ws", nil)
			id := "live-" + a.name
			if f := w.request(map[string]any{"type": "reset", "data": map[string]any{"episode_id": id}}); f["type"] != "observation" {
				t.Fatalf("reset: %v", f)
			}
			for turn := 1; turn <= 2; turn++ {
				first, last := fmt.Sprintf("first-of-turn-%d", turn), fmt.Sprintf("last-of-turn-%d", turn)
				w.send(stepFrame(fmt.Sprintf("reply %s;;waitfor %s;;reply %s", first, gate, last)))
				recs := waitRecorded(t, filepath.Join(rec, id+".jsonl"), first)
				noObservationOf(t, recs, turn)
				waitFed(t, feed, first)
				if err := os.WriteFile(gate, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				obs := obsData(t, w.read())
				if md := meta(t, obs); md["error_type"] != nil || !strings.Contains(responseOf(t, obs), last) {
					t.Fatalf("turn %d: %v", turn, md)
				}
				if err := os.Remove(gate); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestRecordSurvivesSIGKILL: a daemon (with --record-dir) killed with
// SIGKILL mid-turn leaves a record file holding the reset, the turn's
// message and its first event, readable line by line. A last line cut short
// is then read by harnessd export and the console with a note.
func TestRecordSurvivesSIGKILL(t *testing.T) {
	rec, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	cfg := liveConfig(t, liveAdapters(t)[0], "")
	d := startDaemon(t, spec{Flags: append([]string{"--config", cfg, "--record-dir", rec}, isolationProcess...)})
	w := dialRaw(t, d, "/ws", nil)
	if f := w.request(map[string]any{"type": "reset", "data": map[string]any{"episode_id": "killed"}}); f["type"] != "observation" {
		t.Fatalf("reset: %v", f)
	}
	msg := fmt.Sprintf("reply before the kill;;waitfor %s;;reply never", gate)
	w.send(stepFrame(msg))
	path := filepath.Join(rec, "killed.jsonl")
	waitRecorded(t, path, "before the kill")
	d.Signal(syscall.SIGKILL)
	d.Wait()
	// The killed daemon's episodes' disk quotas stay mounted: unmount them
	// as the next daemon's sweep would (TestDiskQuotaSweptAfterSIGKILL).
	if ms, err := quota.UnmountBelow(d.Dir); err != nil {
		t.Logf("unmounting the killed daemon's quotas %v: %v", ms, err)
	}

	recs, cut := readRecordLines(t, path)
	if cut != "" {
		t.Logf("the last line was cut by the kill: %q", cut)
	}
	var kinds []string
	for _, r := range recs {
		k := r.Kind
		if r.Event != nil {
			k += ":" + string(r.Event.Type)
		}
		kinds = append(kinds, k)
	}
	t.Logf("after SIGKILL the record holds %v", kinds)
	if len(recs) < 4 || recs[0].Kind != wire.RecordReset || recs[0].EpisodeID != "killed" || recs[1].Kind != wire.RecordObservation ||
		recs[2].Kind != wire.RecordMessage || recs[2].Content == nil || *recs[2].Content != msg ||
		recs[3].Kind != wire.RecordEvent || !saidText(recs[3].Event, "before the kill") || recs[3].Event.Turn != 1 {
		t.Fatalf("after SIGKILL the record holds %v, want reset, observation, message, the first text_output", kinds)
	}
	noObservationOf(t, recs, 1)

	// A line cut by the kill (made here, at a known place: the kill may
	// have fallen between lines).
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cut == "" {
		line, _ := wire.MarshalNoEscape(wire.Record{Kind: wire.RecordEvent, Time: wire.Now(),
			Event: &wire.Event{Type: wire.EventTextOutput, Timestamp: wire.Now(), Turn: 1, Origin: wire.OriginHarness, Data: &wire.TextOutput{Text: "cut"}}})
		b = append(b, line[:len(line)/2]...)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	whole, _ := readRecordLines(t, path)

	var stdout, stderr bytes.Buffer
	ex := exec.Command(harnessdBin(t), "export", "--format", "atif", path)
	ex.Stdout, ex.Stderr = &stdout, &stderr
	if err := ex.Run(); err != nil {
		t.Fatalf("harnessd export of a record with a cut last line: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "note:") || !strings.Contains(stderr.String(), "cut short") {
		t.Errorf("harnessd export's stderr %q does not note the cut line", stderr.String())
	}
	var traj struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &traj); err != nil || len(traj.Steps) == 0 {
		t.Errorf("harnessd export's trajectory: %v, %d steps: %.300s", err, len(traj.Steps), stdout.String())
	}

	// The console of the next daemon on the same record_dir.
	d2 := startDaemon(t, spec{Flags: append([]string{"--config", cfg, "--record-dir", rec}, isolationProcess...)})
	code, body := d2.DoRaw(http.MethodGet, "/web/api/records/killed.jsonl", "", nil)
	var got struct {
		Records []wire.Record `json:"records"`
		Note    string        `json:"note"`
	}
	if err := json.Unmarshal(body, &got); err != nil || code != http.StatusOK {
		t.Fatalf("the console's record of a cut file: %d %v: %.300s", code, err, body)
	}
	if len(got.Records) != len(whole) || !strings.Contains(got.Note, "cut short") {
		t.Errorf("the console answers %d records and note %q; the file has %d whole records and a cut line", len(got.Records), got.Note, len(whole))
	}
}
