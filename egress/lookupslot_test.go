package egress

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
)

// A host's lookup takes its connection's slot: lookups ran before the slot
// was taken, each up to DialTimeout with a socket of its own, so a harness
// allowed a wildcard name could keep as many in flight as it had client
// connections (256), past MaxConnections. With MaxConnections 2 and lookups
// that hang, 2 of 6 requests are looking up and the other 4 are refused
// with 503 at once; the control: released, the 2 tunnels open.
func TestLookupsTakeAConnectionSlot(t *testing.T) {
	port := echoServer(t)
	release := make(chan struct{})
	var inFlight, most atomic.Int32
	started := make(chan struct{}, 16)
	resolve := func(ctx context.Context, host string) ([]netip.Addr, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		started <- struct{}{}
		select {
		case <-release:
			return loop("127.0.0.1"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	tp := startProxy(t, Options{Policy: Policy{Allow: []string{"*.wild.test:" + port}}, MaxConnections: 2, Resolve: resolve})
	statuses := make(chan int, 6)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, resp := tp.connect(t, "h"+string(rune('a'+i))+".wild.test:"+port)
			statuses <- resp.StatusCode
		}()
	}
	refused := 0
	for refused < 4 { // four answered at once, while two look up
		if st := <-statuses; st != http.StatusServiceUnavailable {
			t.Fatalf("a request answered %d while two lookups hung, want 503", st)
		}
		refused++
	}
	<-started
	<-started
	if n := most.Load(); n != 2 {
		t.Errorf("%d lookups in flight at once, want 2 (MaxConnections)", n)
	}
	close(release)
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusOK {
			t.Errorf("a tunnel whose lookup ended answered %d, want 200", st)
		}
	}
}
