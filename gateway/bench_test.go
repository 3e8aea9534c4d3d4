package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// benchBodies returns an agent's chat request (a system prompt, a few
// turns, tools) and the bytes the gateway sends upstream for it, so the
// bare proxy can send the engine the same request.
func benchBodies(b *testing.B) (agent, upstream []byte) {
	msgs := []any{map[string]any{"role": "system", "content": strings.Repeat("You are a careful coding agent. ", 60)}}
	for i := range 4 {
		msgs = append(msgs, user(fmt.Sprintf("step %d: %s", i, strings.Repeat("look at the code ", 20))),
			map[string]any{"role": "assistant", "content": strings.Repeat("I looked. ", 20)})
	}
	msgs = append(msgs, user("now summarise"))
	req := map[string]any{"model": "m", "messages": msgs, "tools": addTools, "temperature": 0.6, "max_tokens": 4096}
	agent, _ = json.Marshal(req)
	var fields map[string]json.RawMessage
	json.Unmarshal(agent, &fields)
	g, err := New(Options{Upstream: Upstream{URL: "http://127.0.0.1:1/v1"}})
	if err != nil {
		b.Fatal(err)
	}
	upstream, _, err = g.engineBody(fields, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	return agent, upstream
}

// serveProxy runs a bare httputil.ReverseProxy to target on 127.0.0.1.
func serveProxy(b *testing.B, target string) string {
	u, _ := url.Parse(target)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	rp.Transport = tr
	// The body is read whole before it goes upstream, as the gateway reads
	// it: streamed, an engine that answers as soon as it has the last byte
	// can race the end of the proxy's upload, and net/http's server then
	// closes the unread request body under it (the upstream connection
	// dies mid-answer: "use of closed network connection", unexpected EOF
	// at the client; seen under load).
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		rp.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	b.Cleanup(func() { srv.Close(); <-done; tr.CloseIdleConnections() })
	return "http://" + ln.Addr().String()
}

func postBench(c *http.Client, url string, headers map[string]string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// BenchmarkGatewayCall compares a call through the gateway (auth, decode,
// hygiene, engine call, capture, two events, re-encoding) with a bare
// reverse proxy sending the same upstream bytes to the same fake engine.
// Calls alternate between the paths; each of 3 repeats takes b.N calls per
// path and reports the ratio of medians; the summary is the median ratio
// with the spread. Budget: ≤ 1.5.
func BenchmarkGatewayCall(b *testing.B) {
	llm := engine(b, fakellm.Options{})
	// Each path has its own upstream pool, closed with the run.
	up := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(up.CloseIdleConnections)
	gw := startGateway(b, llm.URL(), Options{OnEvent: func(wire.Event) {}, HTTPClient: &http.Client{Transport: up}})
	proxy := serveProxy(b, llm.URL())
	agentBody, upstreamBody := benchBodies(b)
	tg, tp := &http.Transport{}, &http.Transport{}
	b.Cleanup(func() { tg.CloseIdleConnections(); tp.CloseIdleConnections() })
	cg, cp := &http.Client{Transport: tg}, &http.Client{Transport: tp}
	gateway := func() error { return postBench(cg, gw.base+"/v1/chat/completions", gw.bearer(), agentBody) }
	bare := func() error { return postBench(cp, proxy+"/v1/chat/completions", nil, upstreamBody) }
	for range 20 { // warm both paths
		if err := gateway(); err != nil {
			b.Fatal(err)
		}
		if err := bare(); err != nil {
			b.Fatal(err)
		}
	}
	var ratios []float64
	var medG, medP []time.Duration
	b.ResetTimer()
	for range 3 {
		var tg, tp []time.Duration
		for range b.N {
			t0 := time.Now()
			if err := gateway(); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := bare(); err != nil {
				b.Fatal(err)
			}
			tg, tp = append(tg, t1.Sub(t0)), append(tp, time.Since(t1))
		}
		mg, mp := median(tg), median(tp)
		medG, medP = append(medG, mg), append(medP, mp)
		ratios = append(ratios, float64(mg)/float64(mp))
	}
	b.StopTimer()
	r := slices.Clone(ratios)
	slices.Sort(r)
	g, p := median(medG), median(medP)
	b.ReportMetric(float64(g.Microseconds()), "gateway-µs")
	b.ReportMetric(float64(p.Microseconds()), "proxy-µs")
	b.ReportMetric(r[1], "ratio")
	fmt.Printf("\nBENCH gateway call p50 %.0f µs vs bare reverse proxy %.0f µs: ratio %.2f (3 repeats of %d calls: %.2f–%.2f; budget ≤ 1.5); request %d B, upstream %d B\n",
		float64(g)/1e3, float64(p)/1e3, r[1], b.N, r[0], r[2], len(agentBody), len(upstreamBody))
}

// BenchmarkGatewayMemory measures the memory an open, idle gateway costs
// (its key, state, http.Server and listener goroutine), over 256 gateways.
func BenchmarkGatewayMemory(b *testing.B) {
	const n = 256
	for b.Loop() {
		before := heap()
		gws := make([]*Gateway, 0, n)
		for range n {
			g, err := New(Options{Upstream: Upstream{URL: "http://127.0.0.1:1/v1", APIKey: realKey}, OnEvent: func(wire.Event) {}})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Serve(ln); err != nil {
				b.Fatal(err)
			}
			gws = append(gws, g)
		}
		after := heap()
		per := float64(after-before) / n / 1024
		b.ReportMetric(per, "KiB/gateway")
		fmt.Printf("\nBENCH gateway memory per open gateway %.1f KiB (%d gateways, heap + stacks)\n", per, n)
		for _, g := range gws {
			g.Close(context.Background())
		}
	}
}

// heap returns the heap and stack bytes in use after a collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
