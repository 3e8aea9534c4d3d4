package doorcap

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// runs numbers the runs of TestRefusalsAreCountedByDoorAndReason.
var runs atomic.Int64

// count is door's process-wide count of reason (false: no such series).
func count(door, reason string) (uint64, bool) {
	for _, r := range Refusals() {
		if r.Door == door && r.Reason == reason {
			return r.Count, true
		}
	}
	return 0, false
}

// A door's refusals are counted process-wide by door and reason: its
// series exist at 0 once the door is made, a connection beyond the cap
// adds one to door_connection_cap, and a body beyond the budget one to
// door_body_budget (the control: the connection within the cap adds
// nothing).
func TestRefusalsAreCountedByDoorAndReason(t *testing.T) {
	// Counts are process-wide: a door name of this run's own.
	door := fmt.Sprintf("counted door %d", runs.Add(1))
	label := strings.ReplaceAll(door, " ", "_")
	l := NewLimit(Bounds{MaxConns: 1}, door, nil)
	b := NewBudget(10, -1, door, nil)
	for _, reason := range []string{ReasonCap, ReasonReserve, ReasonBodies, ReasonBodyTimeout} {
		if n, ok := count(label, reason); !ok || n != 0 {
			t.Fatalf("%s: series %v at %d before any refusal, want one at 0", reason, ok, n)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wrapped := l.Listen(ln)
	defer wrapped.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := wrapped.Accept() // the first; the second is refused inside Accept
		if err == nil {
			accepted <- c
		}
		wrapped.Accept()
	}()
	first, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	held := <-accepted
	defer held.Close()
	if n, _ := count(label, ReasonCap); n != 0 {
		t.Fatalf("the control: a connection within the cap counted %d refusals", n)
	}
	second, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(second) // the 503, then the close: the refusal is counted by then
	second.Close()
	if n, _ := count(label, ReasonCap); n != 1 {
		t.Errorf("door_connection_cap counted %d after one refused connection, want 1", n)
	}
	b.spent()
	if n, _ := count(label, ReasonBodies); n != 1 {
		t.Errorf("door_body_budget counted %d after one refused body, want 1", n)
	}
}
