package console

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFeedEvent is the console's live feed's cost per turn event:
// from the session's Observer (Observe with a TurnEvent) through the
// feed's encoding and the server-sent events stream of a real HTTP server
// on 127.0.0.1 to a viewer reading it, for 0 and 1 viewers. It reports the
// bytes a viewer reads per event and the process's CPU time per event
// (server and viewer together); docs/benchmarks.md ("The console's live
// feed") reports it. The viewer is kept within its buffer (at most 128
// events in flight), so nothing is dropped.
func BenchmarkFeedEvent(b *testing.B) {
	events := map[string]wire.Event{
		"text_output": wire.Text(wire.OriginHarness, "a forty-byte line of the harness's text."),
		"llm_chunk":   wire.New(wire.OriginHarness, &wire.LLMChunk{Content: "a forty-byte piece of the model's answer", Index: 7, MessageID: "msg_0123456789"}),
		"tool_call": wire.New(wire.OriginBridge, &wire.ToolCall{ToolName: "read_file", CallID: "call_0123456789",
			Arguments: wire.RawJSON(map[string]any{"path": "src/main.go", "offset": 0, "limit": 200})}),
	}
	for _, name := range []string{"text_output", "llm_chunk", "tool_call"} {
		ev := events[name]
		ev.Turn, ev.Timestamp = 3, wire.Now()
		for _, viewers := range []int{0, 1} {
			b.Run(name+"/viewers="+string(rune('0'+viewers)), func(b *testing.B) {
				benchFeed(b, ev, viewers)
			})
		}
	}
}

func benchFeed(b *testing.B, ev wire.Event, viewers int) {
	quit := make(chan struct{})
	defer close(quit)
	pass := func(h http.Handler) http.Handler { return h }
	c := New(Options{
		Config: &config.Config{Name: "bench"}, Sessions: func() []Session { return nil },
		Lookup: func(string) (Session, bool) { return Session{}, false },
		Guard:  pass, PeerOnly: pass, Quit: quit, WriteTimeout: 30 * time.Second,
	})
	mux := http.NewServeMux()
	c.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	got := make(chan int, 256) // the bytes of each record message the viewer read
	if viewers == 1 {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/web/api/events", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		go func() {
			defer close(done)
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if line := sc.Bytes(); bytes.HasPrefix(line, []byte(`data: {"type":"record"`)) {
					select {
					case got <- len(line) + 2: // and the blank line after it
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	m := Session{ID: "s-0123456789", Kind: "ws"}
	te := session.TurnEvent{SessionID: m.ID, EpisodeID: "e-0123456789", Event: ev}
	var bytesRead, inflight int
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for range b.N {
		c.Observe(m, te)
		if viewers == 0 {
			continue
		}
		if inflight++; inflight == 128 {
			for ; inflight > 0; inflight-- {
				bytesRead += <-got
			}
		}
	}
	for ; inflight > 0; inflight-- {
		bytesRead += <-got
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/event")
	b.ReportMetric(float64(bytesRead)/float64(b.N), "bytes/event")
}
