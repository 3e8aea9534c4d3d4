package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// TestLifecycle: a gateway serves on several listeners, each with the same
// key; Close stops all of them and is idempotent; Serve after Close fails.
func TestLifecycle(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	if !strings.HasPrefix(gw.Key(), "sk-harnessd-") || len(gw.Key()) < 40 {
		t.Errorf("key %q", gw.Key())
	}
	other, err := New(Options{Upstream: Upstream{URL: llm.URL() + "/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if other.Key() == gw.Key() {
		t.Error("two gateways share a key")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Serve(ln); err != nil {
		t.Fatal(err)
	}
	second := &testGateway{Gateway: gw.Gateway, base: "http://" + ln.Addr().String(), events: gw.events, client: gw.client}
	if status, body := second.post(t, "/v1/chat/completions", gw.bearer(), map[string]any{"messages": []any{user("hi")}}); status != 200 {
		t.Fatalf("second listener: %d %s", status, body)
	}
	if err := gw.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(context.Background()); err != nil {
		t.Fatalf("second close: %v", err)
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := gw.Serve(ln2); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
	gw.client.CloseIdleConnections()
	if _, err := gw.client.Post(second.base+"/v1/chat/completions", "application/json", strings.NewReader("{}")); err == nil {
		t.Error("a closed gateway still answers")
	}
	// Probes need no key and say nothing.
	gw2 := startGateway(t, llm.URL(), Options{})
	req, _ := http.NewRequest(http.MethodHead, gw2.base+"/", nil)
	resp, err := gw2.client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD /: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestConcurrentCalls: calls of every dialect at once get distinct
// indexes, the running turn, and a consistent export.
func TestConcurrentCalls(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{Budgets: Budgets{MaxModelCalls: 100}})
	gw.SetTurn(2)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		d := dialectCases()[i%4]
		wg.Go(func() {
			status, body := gw.post(t, d.path, d.headers(gw), d.body)
			if status != 200 {
				errs <- fmt.Errorf("%s: %d %s", d.name, status, body)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[int]bool{}
	for _, ev := range gw.events.list() {
		if ev.Turn != 2 {
			t.Errorf("event in turn %d", ev.Turn)
		}
	}
	for idx, r := range gw.events.responses() {
		if seen[idx] || r.CompletionTokenIDs == nil {
			t.Errorf("call %d: duplicate or without ids", idx)
		}
		seen[idx] = true
	}
	if len(seen) != 32 {
		t.Errorf("%d distinct calls", len(seen))
	}
	ex, err := gw.Export()
	if err != nil || len(ex.Calls) != 32 || len(ex.Validate()) != 0 {
		t.Errorf("export: %v, %d calls", err, len(ex.Calls))
	}
}
