package server

// The cost of an accepted connection, against a bare Go http.Server in the
// same process (docs/benchmarks.md; `make bench`). Nothing here asserts on
// time: the figures are reported as BENCH lines.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

const (
	acceptSamples = 200 // connections per repeat
	acceptRepeats = 3
)

// bareServer is the floor: a plain http.Server answering /health with a
// small JSON body and /ws by accepting the WebSocket and answering each
// frame with one small frame.
func bareServer(b *testing.B) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"healthy"}`))
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
			if err := c.Write(r.Context(), websocket.MessageText, []byte(`{"type":"state","data":{"step_count":0}}`)); err != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	b.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// healthFirstByte dials addr, sends GET /health and returns the time until
// the first byte of the answer.
func healthFirstByte(addr string) (time.Duration, error) {
	t0 := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	if _, err := r.ReadByte(); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// wsFirstFrame dials addr's /ws, sends a state frame and returns the time
// until the first answering frame.
func wsFirstFrame(addr string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
	if err != nil {
		return 0, err
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"state"}`)); err != nil {
		return 0, err
	}
	if _, _, err := c.Read(ctx); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	c.Close(websocket.StatusNormalClosure, "")
	return d, nil
}

// medianOf runs probe acceptSamples times and returns the median.
func medianOf(probe func(string) (time.Duration, error), addr string) (time.Duration, error) {
	s := make([]time.Duration, 0, acceptSamples)
	for range acceptSamples {
		d, err := probe(addr)
		if err != nil {
			return 0, err
		}
		s = append(s, d)
	}
	slices.Sort(s)
	return s[len(s)/2], nil
}

// openSessions opens n /ws sessions on addr. With reset (the daemon), each
// is reset, so that its test agent (jsonl) runs for the rest of the
// benchmark; the bare server gets n open WebSocket connections.
func openSessions(b *testing.B, addr string, n int, reset bool) {
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
		if err != nil {
			cancel()
			b.Fatalf("open session: %v", err)
		}
		b.Cleanup(func() { c.CloseNow() })
		if reset {
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"reset","data":{}}`)); err != nil {
				cancel()
				b.Fatalf("reset an open session: %v", err)
			}
			_, frame, err := c.Read(ctx)
			if err != nil || strings.Contains(string(frame), `"type":"error"`) {
				cancel()
				b.Fatalf("reset an open session: %s, %v", frame, err)
			}
		}
		cancel()
	}
}

// BenchmarkAccept measures an accepted connection, dial to first byte of a
// /health answer (a route without the peer check) and WebSocket dial to the
// first answering frame on /ws (a guarded route: it pays the peer check),
// against the bare server, at 0 and 256 open sessions (each reset, its test
// agent running, on the daemon; open WebSocket connections on the bare
// server): the median of
// acceptSamples connections, median and spread of acceptRepeats repeats,
// harnessd and floor interleaved per repeat.
func BenchmarkAccept(b *testing.B) {
	ts := start(b, Options{MaxSessions: 512})
	daemon := strings.TrimPrefix(ts.url, "http://")
	bare := bareServer(b)
	probes := []struct {
		name  string
		probe func(string) (time.Duration, error)
	}{{"health", healthFirstByte}, {"ws", wsFirstFrame}}
	open := 0
	for b.Loop() {
		for _, sessions := range []int{0, 256} {
			openSessions(b, daemon, sessions-open, true)
			openSessions(b, bare, sessions-open, false)
			open = sessions
			for _, p := range probes {
				var ours, floor, ratio []float64
				for range acceptRepeats {
					h, err := medianOf(p.probe, daemon)
					if err != nil {
						b.Fatal(err)
					}
					f, err := medianOf(p.probe, bare)
					if err != nil {
						b.Fatal(err)
					}
					ours, floor = append(ours, us(h)), append(floor, us(f))
					ratio = append(ratio, us(h)/us(f))
				}
				mo, so := medSpread(ours)
				mf, sf := medSpread(floor)
				mr, sr := medSpread(ratio)
				fmt.Printf("\nBENCH accept %s sessions=%d trees=%d harnessd %.0fµs ±%.0f, bare %.0fµs ±%.0f, ratio %.2f× ±%.2f (target ≤ 1.5×; peer check %s)\n",
					p.name, sessions, ts.sup.Live(), mo, so, mf, sf, mr, sr, ts.sup.Mechanisms().PeerCheck)
				b.ReportMetric(mr, p.name+"-"+fmt.Sprint(sessions)+"-ratio")
			}
		}
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// medSpread returns the median of xs and half its range.
func medSpread(xs []float64) (median, spread float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], (s[len(s)-1] - s[0]) / 2
}
