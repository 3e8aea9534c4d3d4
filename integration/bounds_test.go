package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/wire"
)

// Memory bounds under floods, measured on the real daemon from
// /proc/<pid>/status: its peak resident set (VmHWM, reset to the current
// RSS before the flood where the kernel allows it) against its RSS before.
// The bounds are generous; the figures are logged.

const (
	mib = 1 << 20
	// defaultFrameLimit is harnessd serve's --max-frame-bytes default.
	defaultFrameLimit = 64 * mib
)

// memStatus reads a process's VmRSS and VmHWM in bytes.
func memStatus(t testing.TB, pid int) (rss, hwm int64) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read status of %d: %v", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("%s of %d: %q", k, pid, v)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 || hwm == 0 {
		t.Fatalf("no VmRSS/VmHWM for %d", pid)
	}
	return rss, hwm
}

// memProbe measures a daemon's memory growth from now on.
type memProbe struct {
	t    testing.TB
	pid  int
	base int64 // RSS when the probe started
}

// probeMemory starts measuring d: the peak is reset to the current RSS
// (clear_refs 5) so that start-up peaks do not count; where the kernel
// refuses, the old peak stays and the figure only overstates growth.
func probeMemory(t testing.TB, d *daemon) *memProbe {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", d.Pid()), []byte("5"), 0); err != nil {
		t.Logf("cannot reset the daemon's peak RSS (%v); growth is measured from the older peak", err)
	}
	rss, _ := memStatus(t, d.Pid())
	return &memProbe{t: t, pid: d.Pid(), base: rss}
}

// growth returns the peak and current RSS above the start, in bytes.
func (p *memProbe) growth() (peak, now int64) {
	rss, hwm := memStatus(p.t, p.pid)
	return hwm - p.base, rss - p.base
}

// floodStep runs one step of "lines 2M" on w and checks the observation:
// output_limit, within the frame limit, bounded and marked. It returns the
// frame's size and the number of events kept.
func floodStep(t testing.TB, w *rawWS) (frameBytes, events int, truncated map[string]any) {
	t.Helper()
	w.send(stepFrame("lines 2M"))
	b, err := w.readRaw()
	if err != nil {
		t.Fatalf("read the flood's observation: %v", err)
	}
	if len(b) > defaultFrameLimit {
		t.Errorf("observation frame of %d bytes, over the %d-byte frame limit", len(b), defaultFrameLimit)
	}
	var f map[string]any
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("observation frame is not JSON: %v", err)
	}
	obs := obsData(t, f)
	md := meta(t, obs)
	if md["error_type"] != "output_limit" || obs["done"] != true {
		t.Fatalf("a 2 M-line flood ended with error_type %v, done %v; want output_limit", md["error_type"], obs["done"])
	}
	evs, _ := md["turn_events"].([]any)
	tr, ok := md["truncated"].(map[string]any)
	if !ok {
		t.Fatalf("no metadata.truncated after a flood: %d events kept", len(evs))
	}
	if tr["reason"] != "max_turn_event_bytes" || tr["events_dropped"].(float64) < 100_000 || tr["bytes_dropped"].(float64) < 1e6 {
		t.Errorf("truncated %v, want max_turn_event_bytes with the flood's lines dropped", tr)
	}
	if len(evs) > 1000 {
		t.Errorf("%d events kept; adjacent lines should be coalesced", len(evs))
	}
	return len(b), len(evs), tr
}

// TestFloodBoundedMemory: a harness printing 2 M short lines in one turn is
// ended with output_limit, its observation frame stays under the frame
// limit with a truncation marker, and the daemon's RSS grows by less than
// 100 MiB (the audit measured 1.33 GB and a 220 MB frame).
func TestFloodBoundedMemory(t *testing.T) {
	d := startDaemon(t, spec{Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)
	obsData(t, w.request(map[string]any{"type": "reset"}))
	if got := responseOf(t, obsData(t, w.request(stepFrame("count")))); got != "turns: 1" {
		t.Fatalf("warm-up turn: %q", got)
	}
	mem := probeMemory(t, d)
	size, events, tr := floodStep(t, w)
	// The connection's frames are handled in order: once state answers,
	// whatever followed the flood's observation is done.
	if f := w.request(map[string]any{"type": "state"}); f["type"] != "state" {
		t.Fatalf("state after the flood: %v", f)
	}
	peak, now := mem.growth()
	t.Logf("flood: frame %d bytes, %d events kept, truncated %v; daemon RSS growth peak %.1f MiB, after %.1f MiB",
		size, events, tr, float64(peak)/mib, float64(now)/mib)
	if peak > 100*mib {
		t.Errorf("daemon RSS grew by %.1f MiB during one flooding turn, bound 100 MiB", float64(peak)/mib)
	}
	// The turn's memory is returned once its observation is sent; what
	// stays is the episode's trajectory (the 8 MiB of events it kept).
	if now > 40*mib {
		t.Errorf("daemon RSS stays %.1f MiB above its start after the flooding turn, bound 40 MiB", float64(now)/mib)
	}
	// The session is over (output_limit), the daemon is not: a new episode runs.
	obsData(t, w.request(map[string]any{"type": "reset"}))
	if got := responseOf(t, obsData(t, w.request(stepFrame("count")))); got != "turns: 1" {
		t.Fatalf("after the flood: %q", got)
	}
}

// TestFloodingSessionsBesideASteadyOne: two sessions flood at once while a
// third keeps stepping; the third sees no error and the daemon's memory
// stays bounded.
func TestFloodingSessionsBesideASteadyOne(t *testing.T) {
	d := startDaemon(t, spec{Flags: []string{"--max-sessions", "3"}, Harness: agentCmd(t)})
	steady := dialRaw(t, d, "/ws", nil)
	obsData(t, steady.request(map[string]any{"type": "reset"}))
	floods := []*rawWS{dialRaw(t, d, "/ws", nil), dialRaw(t, d, "/ws", nil)}
	for _, w := range floods {
		obsData(t, w.request(map[string]any{"type": "reset"}))
	}
	mem := probeMemory(t, d)

	var wg sync.WaitGroup
	done := make(chan struct{})
	for i, w := range floods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size, events, _ := floodStep(t, w)
			t.Logf("flood %d: frame %d bytes, %d events kept", i, size, events)
		}()
	}
	go func() { wg.Wait(); close(done) }()

	turns := 0
	for running := true; running || turns < 3; {
		select {
		case <-done:
			running = false
		default:
		}
		turns++
		obs := obsData(t, steady.request(stepFrame("count")))
		if md := meta(t, obs); md["error_type"] != nil {
			t.Fatalf("steady session's turn %d failed beside the floods: %v", turns, md["error_type"])
		}
		if got, want := responseOf(t, obs), fmt.Sprintf("turns: %d", turns); got != want {
			t.Fatalf("steady session's turn %d answered %q, want %q", turns, got, want)
		}
	}
	for _, w := range floods {
		if f := w.request(map[string]any{"type": "state"}); f["type"] != "state" {
			t.Fatalf("state after the flood: %v", f)
		}
	}
	peak, now := mem.growth()
	t.Logf("two floods beside %d steady turns: daemon RSS growth peak %.1f MiB, after %.1f MiB", turns, float64(peak)/mib, float64(now)/mib)
	if peak > 200*mib {
		t.Errorf("daemon RSS grew by %.1f MiB during two flooding turns, bound 200 MiB", float64(peak)/mib)
	}
}

// TestHugeClientFrameRefused: a 100 MB client frame is refused with an
// error frame without the daemon holding more than the frame limit of it
// (RSS growth under 80 MiB; the audit measured 178 MB), and the session
// goes on.
func TestHugeClientFrameRefused(t *testing.T) {
	d := startDaemon(t, spec{Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)
	obsData(t, w.request(map[string]any{"type": "reset"}))
	mem := probeMemory(t, d)

	const size = 100_000_000
	ctx, cancel := context.WithTimeout(context.Background(), frameTimeout)
	defer cancel()
	mw, err := w.c.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	head := `{"type":"step","data":{"message":"`
	chunk := []byte(strings.Repeat("m", mib))
	written, _ := mw.Write([]byte(head))
	for written < size-3 {
		n, err := mw.Write(chunk[:min(len(chunk), size-3-written)])
		if err != nil {
			t.Fatalf("write the big frame after %d bytes: %v", written, err)
		}
		written += n
	}
	mw.Write([]byte(`"}}`))
	if err := mw.Close(); err != nil {
		t.Fatalf("finish the big frame: %v", err)
	}
	data := errorData(t, w.read(), "VALIDATION_ERROR")
	if msg := data["message"].(string); !strings.Contains(msg, "frame of 100000000 bytes exceeds the maximum") {
		t.Errorf("refusal: %v", msg)
	}
	peak, now := mem.growth()
	t.Logf("100 MB frame refused: daemon RSS growth peak %.1f MiB, after %.1f MiB", float64(peak)/mib, float64(now)/mib)
	if peak > 80*mib {
		t.Errorf("daemon RSS grew by %.1f MiB refusing a 100 MB frame, bound 80 MiB", float64(peak)/mib)
	}
	if got := responseOf(t, obsData(t, w.request(stepFrame("count")))); got != "turns: 1" {
		t.Fatalf("after the refused frame: %q", got)
	}
}

// TestHugeHTTPBodyRefusedAtOnce: a POST whose Content-Length is over the
// frame limit is answered 413 before its body is read.
func TestHugeHTTPBodyRefusedAtOnce(t *testing.T) {
	d := startDaemon(t, spec{Harness: agentCmd(t)})
	mem := probeMemory(t, d)
	c, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A bound on the wait, not a timed assertion: a daemon that waits for
	// the whole body fails the test instead of hanging it.
	c.SetDeadline(time.Now().Add(frameTimeout))
	// Only the headers and a little of the body are sent: the answer must
	// not wait for the rest.
	fmt.Fprintf(c, "POST /step HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{\"action\":", d.Addr)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to an oversized body: %v", err)
	}
	if !strings.Contains(line, " 413 ") {
		t.Fatalf("status line %q, want 413", line)
	}
	peak, _ := mem.growth()
	t.Logf("100 MB HTTP body refused: daemon RSS growth peak %.1f MiB", float64(peak)/mib)
	if peak > 16*mib {
		t.Errorf("daemon RSS grew by %.1f MiB refusing a body by its Content-Length", float64(peak)/mib)
	}
}

// TestClientStringsValidated: a NUL or control character in episode_id,
// a step's message or a session id is a VALIDATION_ERROR naming the field
// (it used to surface as "exec: already started"), and the session goes on.
func TestClientStringsValidated(t *testing.T) {
	d := startDaemon(t, spec{Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)
	data := errorData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{"episode_id": "ep\x00one"}}), "VALIDATION_ERROR")
	errs, _ := data["errors"].([]any)
	if len(errs) != 1 || fmt.Sprint(obj(t, errs[0], "error")["loc"]) != "[episode_id]" {
		t.Fatalf("NUL in episode_id: %v", data)
	}
	obs := obsData(t, w.request(map[string]any{"type": "reset", "data": map[string]any{"episode_id": "ep-one"}}))
	if id := meta(t, obs)["episode_id"]; id != "ep-one" {
		t.Fatalf("episode id %v", id)
	}
	data = errorData(t, w.request(stepFrame("reply a\x1bb")), "VALIDATION_ERROR")
	errs, _ = data["errors"].([]any)
	if len(errs) != 1 || fmt.Sprint(obj(t, errs[0], "error")["loc"]) != "[message]" {
		t.Fatalf("ESC in a message: %v", data)
	}
	if got := responseOf(t, obsData(t, w.request(stepFrame("reply two\tcolumns")))); got != "two\tcolumns" {
		t.Fatalf("a tab in a message: %q", got)
	}

	code, body := d.DoRaw("POST", "/reset", `{"episode_id":"a\u0007b"}`, nil)
	if code != 422 || !strings.Contains(string(body), "episode_id") || !strings.Contains(string(body), "control characters") {
		t.Fatalf("POST /reset with BEL in episode_id: %d %s", code, body)
	}
	code, body = d.DoRaw("GET", "/state?session_id=x%00y", "", nil)
	if code != 422 || !strings.Contains(string(body), "session_id") {
		t.Fatalf("GET /state with NUL in session_id: %d %s", code, body)
	}
	bad := dialRaw(t, d, "/ws?session_id=a%01b", nil)
	_, _, frames := bad.expectClose()
	if len(frames) != 1 {
		t.Fatalf("/ws?session_id with a control character: frames %v", frames)
	}
	errorData(t, frames[0], "VALIDATION_ERROR")
}

// TestHarnessStreamFloodBounded: on /harness a 2 M-line flood streams the
// events the turn keeps (a smaller max_turn_event_bytes keeps the test
// quick), then the daemon's notice of the cut, nothing of what it dropped,
// and ends the session with output_limit; the record file holds what the
// turn kept, its lines coalesced; the daemon's memory stays bounded.
func TestHarnessStreamFloodBounded(t *testing.T) {
	rec := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
name: flood
harness:
  command: [%q, agent]
episode:
  max_turn_event_bytes: 256KiB
record_dir: %q
`, testharnessBin(t), rec))
	d := startDaemon(t, spec{Flags: []string{"--mode", "production", "--config", cfg}})
	w := dialRaw(t, d, "/harness", nil)
	sessionStarted(t, w, "flood")
	mem := probeMemory(t, d)
	w.send(map[string]any{"type": "message", "content": "lines 2M"})
	lines, notices := 0, 0
	var last map[string]any
	for {
		b, err := w.readRaw()
		if err != nil {
			break // the session ends after the terminal error
		}
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame is not JSON: %v", err)
		}
		switch {
		case f["type"] == "text_output":
			if notices > 0 {
				t.Fatalf("a text_output was streamed after the cut: %v", f)
			}
			lines++
		case f["type"] == "error" && f["source"] == "daemon":
			if data := obj(t, f["data"], "error data"); data["recoverable"] == true {
				notices++
			} else {
				last = data
			}
		}
	}
	peak, _ := mem.growth()
	t.Logf("/harness flood: %d lines streamed, %d notices, end %v; daemon RSS growth peak %.1f MiB", lines, notices, last, float64(peak)/mib)
	if notices != 1 || lines < 10_000 || lines > 15_000 {
		t.Errorf("streamed %d lines and %d notices of the cut; want the ~14,000 kept lines and one notice", lines, notices)
	}
	if msg, _ := last["message"].(string); !strings.Contains(msg, "more than") {
		t.Errorf("terminal error %v, want the output limit's", last)
	}
	if peak > 100*mib {
		t.Errorf("daemon RSS grew by %.1f MiB during one flooding /harness turn, bound 100 MiB", float64(peak)/mib)
	}

	d.WaitSessions(0)
	files, _ := filepath.Glob(filepath.Join(rec, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("record files %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	recs, err := wire.ReadRecords(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	recorded, textEvents := 0, 0
	for _, r := range recs {
		if r.Kind != wire.RecordEvent || r.Event == nil {
			continue
		}
		if to, ok := r.Event.Data.(*wire.TextOutput); ok {
			textEvents++
			recorded += strings.Count(to.Text, "\n") + 1
		}
	}
	if recorded != lines || textEvents >= lines/100 {
		t.Errorf("the record holds %d lines in %d events; the stream had %d lines", recorded, textEvents, lines)
	}
}

// TestWSPipelinedFramesBounded: frames a client sends while a turn runs
// wait in order, but no more than the frame limit of them in all: one past
// that is refused (in its turn, with an error frame) rather than held, and
// the replies keep the order of the requests.
func TestWSPipelinedFramesBounded(t *testing.T) {
	d := startDaemon(t, spec{Flags: []string{"--max-frame-bytes", "1MiB"}, Harness: agentCmd(t)})
	w := dialRaw(t, d, "/ws", nil)
	obsData(t, w.request(map[string]any{"type": "reset"}))
	pad := strings.Repeat("p", 700<<10)
	// The turn sleeps so that the frames after it arrive while it runs
	// (were it over first, nothing would be refused and the test fail).
	w.send(stepFrame("sleep 3s;;reply slept"))
	w.send(map[string]any{"type": "state", "pad": pad}) // waits: 700 KiB
	w.send(map[string]any{"type": "state", "pad": pad}) // 1.4 MiB waiting: refused
	w.send(map[string]any{"type": "state"})
	if got := responseOf(t, obsData(t, w.read())); got != "slept" {
		t.Fatalf("the turn: %q", got)
	}
	first := errorData(t, w.read(), "VALIDATION_ERROR")
	if errs, _ := first["errors"].([]any); len(errs) != 1 || obj(t, errs[0], "error")["type"] != "extra_forbidden" {
		t.Fatalf("the first padded frame: %v", first)
	}
	if in, _ := obj(t, first["errors"].([]any)[0], "error")["input"].(string); len(in) > 1024 {
		t.Errorf("the error quotes back %d bytes of the frame", len(in))
	}
	second := errorData(t, w.read(), "VALIDATION_ERROR")
	if msg := second["message"].(string); !strings.Contains(msg, "still waiting") {
		t.Fatalf("the second padded frame: %v", second)
	}
	if f := w.read(); f["type"] != "state" {
		t.Fatalf("the last frame's reply: %v", f)
	}
}
