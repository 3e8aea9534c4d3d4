package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/client"
)

// openSessions opens n /ws sessions on the daemon, each reset (a live
// harness) and, with step, stepped once, 8 at a time, and returns them.
func openSessions(tb testing.TB, url string, n int, step bool) []*client.Env {
	tb.Helper()
	ctx := context.Background()
	envs := make([]*client.Env, n)
	errs := make(chan error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				env, err := client.Dial(ctx, url, nil)
				if err != nil {
					errs <- fmt.Errorf("session %d: dial: %w", i, err)
					continue
				}
				envs[i] = env
				if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
					errs <- fmt.Errorf("session %d: reset: %w", i, err)
					continue
				}
				if !step {
					continue
				}
				if obs, err := env.Step(ctx, "reply hello"); err != nil || obs.ResponseText() != "hello" {
					errs <- fmt.Errorf("session %d: step: %v", i, err)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
	return envs
}

func closeSessions(envs []*client.Env) {
	for _, e := range envs {
		if e != nil {
			e.Close()
		}
	}
}

// firstFrame dials a WebSocket, sends frame and reads the first frame back.
func firstFrame(ctx context.Context, url string, frame []byte) (time.Duration, error) {
	t0 := time.Now()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return 0, fmt.Errorf("dial %s: %w", url, err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
		return 0, fmt.Errorf("write %s: %w", url, err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		return 0, fmt.Errorf("read %s: %w", url, err)
	}
	return time.Since(t0), nil
}

// firstResponse GETs url on a new connection and reads the whole response.
func firstResponse(hc *http.Client, url string) (time.Duration, error) {
	t0 := time.Now()
	resp, err := hc.Get(url)
	if err != nil {
		return 0, fmt.Errorf("get %s: %w", url, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return time.Since(t0), err
}

// BenchmarkConnect: dial-to-first-frame on /ws (a state request and its
// answer, the daemon's cheapest frame) and dial-to-first-response on
// /health (a new TCP connection each), against a bare Go server (benchfloor
// bare: net/http + coder/websocket, a process of its own) doing the same,
// interleaved connectDials of each per repeat; first with no sessions open, then
// with 256 open on the daemon (each reset, a live harness) and 256 open
// WebSocket connections on the bare server. Run it with -benchtime 1x: the
// counts are fixed (connectDials per repeat and level), as opening 256
// sessions is what costs, and go test would first run it with b.N = 1.
func BenchmarkConnect(b *testing.B) {
	const open, connectDials = 256, 50
	frame := []byte(`{"type":"state"}`)
	type figs struct{ ws, wsFloor, health, healthFloor, rWS, rHealth []float64 }
	levels := map[int]*figs{0: {}, open: {}}
	for rep := 0; rep < repeats; rep++ {
		ctx := context.Background()
		d := startDaemon(b, spec{Flags: append([]string{"--max-sessions", "512"}, infoLog...), Harness: agentCmd(b)})
		bare := startFloor(b, "bare", "-reply-size", "200")
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		var envs []*client.Env
		var bareConns []*websocket.Conn
		for _, level := range []int{0, open} {
			if level > 0 {
				envs = openSessions(b, d.URL, level, false)
				for range level {
					c, _, err := websocket.Dial(ctx, "ws://"+bare.Addr+"/ws", nil)
					if err != nil {
						b.Fatal(err)
					}
					bareConns = append(bareConns, c)
				}
			}
			var ws, wsF, h, hF samples
			for i := -10; i < connectDials; i++ { // the first 10: warm-up
				a, err1 := firstFrame(ctx, "ws://"+d.Addr+"/ws", frame)
				f, err2 := firstFrame(ctx, "ws://"+bare.Addr+"/ws", frame)
				c, err3 := firstResponse(hc, d.URL+"/health")
				e, err4 := firstResponse(hc, "http://"+bare.Addr+"/health")
				for _, err := range []error{err1, err2, err3, err4} {
					if err != nil {
						b.Fatal(err)
					}
				}
				if i >= 0 {
					ws, wsF, h, hF = append(ws, a), append(wsF, f), append(h, c), append(hF, e)
				}
			}
			fg := levels[level]
			fg.ws, fg.wsFloor = append(fg.ws, us(ws.p50())), append(fg.wsFloor, us(wsF.p50()))
			fg.health, fg.healthFloor = append(fg.health, us(h.p50())), append(fg.healthFloor, us(hF.p50()))
			fg.rWS = append(fg.rWS, float64(ws.p50())/float64(wsF.p50()))
			fg.rHealth = append(fg.rHealth, float64(h.p50())/float64(hF.p50()))
		}
		for _, c := range bareConns {
			c.CloseNow()
		}
		closeSessions(envs)
		hc.CloseIdleConnections()
		d.WaitSessions(0)
		d.Stop()
		bare.stop()
	}
	for _, level := range []int{0, open} {
		fg := levels[level]
		ws, wsF, rWS := spreadOf(fg.ws), spreadOf(fg.wsFloor), spreadOf(fg.rWS)
		h, hF, rH := spreadOf(fg.health), spreadOf(fg.healthFloor), spreadOf(fg.rHealth)
		summary("connect sessions=%d n=%d×%d: /ws dial-to-first-frame p50 %sµs vs bare p50 %sµs → ratio %s | /health dial-to-response p50 %sµs vs bare p50 %sµs → ratio %s (target ≤ 1.5)",
			level, repeats, connectDials, ws.Format("%.0f"), wsF.Format("%.0f"), rWS.Format("%.2f"), h.Format("%.0f"), hF.Format("%.0f"), rH.Format("%.2f"))
		ratioRow(fmt.Sprintf("connect: /ws dial-to-first-frame p50, %d open sessions, vs bare Go server", level), "µs", ws, wsF, rWS, 1.5)
		ratioRow(fmt.Sprintf("connect: /health dial-to-response p50, %d open sessions, vs bare Go server", level), "µs", h, hF, rH, 1.5)
	}
}
