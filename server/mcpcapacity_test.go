package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMCPWithoutSessionTakesASlot: a POST /mcp tools/call or tools/list
// that names no session runs on a session of its own, made for the request:
// it starts the environment's tool servers (processes) and lasts as long as
// the call. It took no slot of max_sessions, so a client at capacity could
// still have the daemon start a set of tool servers per request, as many
// as it sent requests at once.
//
// Measured before the fix, with max_sessions 1 taken by a session: 8
// concurrent calls of the slow tool without session_id had 8 tool servers
// live at once; the control (openenv/session/create) was refused at
// capacity. After it, each such request takes a slot while it runs: one
// is served at a time at most, the others are answered with the capacity
// error.
func TestMCPWithoutSessionTakesASlot(t *testing.T) {
	ts := start(t, Options{MaxSessions: 1})
	rpc := func(body string) map[string]any {
		resp, err := http.Post(ts.url+"/mcp", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return nil
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	// A call on an idle server is served (the measurement can see tool
	// servers start).
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"seconds":1.5}}}`
	before := ts.sup.Live()
	peak := 0
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			peak = max(peak, ts.sup.Live()-before)
		}
	}()
	if r := rpc(call); r["result"] == nil {
		t.Fatalf("control: a call on an idle server: %v", r)
	}
	close(stop)
	watch.Wait()
	if peak < 1 {
		t.Fatalf("control: no tool server seen during a call (peak %d)", peak)
	}

	// The one slot taken; creating another session is refused.
	created := rpc(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
	if created["result"] == nil {
		t.Fatalf("create: %v", created)
	}
	if c := rpc(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`); code(c) != rpcCapacity {
		t.Fatalf("control: a second session at capacity: %v", c)
	}

	const flood = 8
	peak = 0
	stop = make(chan struct{})
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			peak = max(peak, ts.sup.Live()-before)
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	served, refused := 0, 0
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rpc(call)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r["result"] != nil:
				served++
			case code(r) == rpcCapacity:
				refused++
			}
		}()
	}
	wg.Wait()
	close(stop)
	watch.Wait()
	t.Logf("at capacity: %d calls without session_id: %d served, %d refused, %d tool servers live at most", flood, served, refused, peak)
	if peak > 1 || served > 0 {
		t.Errorf("at max_sessions 1 (taken), %d calls without session_id had %d tool servers live at once (%d served): they take no slot", flood, peak, served)
	}
}
