package streamjson

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
)

// TestDeliverWhileTheMessageIsWritten: a delivery that arrives while the
// turn's user line is still being written (a harness that has not read it
// yet: the line is longer than the pipe) waits for that write and goes in
// after it, in the same turn, rather than finding no turn. The harness
// answers the initialize request, then reads nothing until the gate file
// exists, then answers "event" only when
// its second line is the delivery (in the turn's last result: the turn
// waits for the delivered line's result too).
func TestDeliverWhileTheMessageIsWritten(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	script := `read c
id=$(printf '%s' "$c" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
echo '{"type":"control_response","response":{"subtype":"success","request_id":"'"$id"'","response":{}}}'
while [ ! -e ` + gate + ` ]; do sleep 0.01; done
read m; read e
case "$e" in *hello*) r=event;; *) r="no event";; esac
echo '{"type":"result","subtype":"success","is_error":false,"result":"first","session_id":"s1"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"'"$r"'","session_id":"s1"}'
exec sleep 1000`
	l := adaptertest.Launch(t, "sh", "-c", script)
	l.Options = map[string]any{"mid_turn_input": true}
	a := startLaunch(t, l)
	type result struct {
		response string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		res, _, err := turn(t, a, 1, strings.Repeat("m", 256<<10))
		done <- result{res.Response, err}
	}()
	for begun := time.Now(); ; time.Sleep(time.Millisecond) {
		a.mu.Lock()
		writing := a.writing.Pending() != nil
		a.mu.Unlock()
		if writing {
			break
		}
		if time.Since(begun) > 5*time.Second {
			t.Fatal("the turn's user line was never being written")
		}
	}
	delivered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		delivered <- a.Deliver(ctx, "hello")
	}()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-delivered; err != nil {
		t.Fatalf("deliver: %v", err)
	}
	r := <-done
	if r.err != nil || !strings.Contains(r.response, "event") || strings.Contains(r.response, "no event") {
		t.Fatalf("turn: %q, %v; want the delivery read after the message, in the turn", r.response, r.err)
	}
}
