package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// strayReset takes the only slot with a POST /reset nobody follows up and
// returns its session id.
func strayReset(t *testing.T, d *daemon) string {
	t.Helper()
	code, v := d.Do("POST", "/reset", "{}", nil)
	if code != http.StatusOK {
		t.Fatalf("POST /reset: %d %v", code, v)
	}
	id, _ := obj(t, v, "reset")["session_id"].(string)
	if id == "" {
		t.Fatalf("POST /reset without a session_id: %v", v)
	}
	return id
}

// wsRefused checks that a /ws connection is refused at capacity with a
// message saying how to free a slot, and returns that message.
func wsRefused(t *testing.T, d *daemon) string {
	t.Helper()
	w := dialRaw(t, d, "/ws", nil)
	code, _, frames := w.expectClose()
	if code != websocket.StatusPolicyViolation || len(frames) != 1 {
		t.Fatalf("a /ws connection at capacity: close %d, frames %v", code, frames)
	}
	return errorData(t, frames[0], "CAPACITY_REACHED")["message"].(string)
}

// TestHTTPClose: a stray POST /reset no longer holds the only slot forever:
// CAPACITY_REACHED says how to free it, POST /close (with the session id, or
// for the default session without one) frees it.
func TestHTTPClose(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--idle-timeout", "0"}, Harness: agentCmd(t)})

	id := strayReset(t, d)
	msg := wsRefused(t, d)
	for _, want := range []string{"POST /close", "--max-sessions", "--idle-timeout"} {
		if !strings.Contains(msg, want) {
			t.Errorf("CAPACITY_REACHED message %q does not mention %s", msg, want)
		}
	}
	code, v := d.Do("POST", "/close", `{"session_id":"`+id+`"}`, nil)
	if code != http.StatusOK || obj(t, v, "close")["closed"] != true {
		t.Fatalf("POST /close: %d %v", code, v)
	}
	d.WaitSessions(0)
	d.WaitTreeEmpty()
	if code, _ := d.Do("POST", "/close", `{"session_id":"`+id+`"}`, nil); code != http.StatusNotFound {
		t.Errorf("POST /close of a closed session: HTTP %d, want 404", code)
	}
	if code, v := d.Do("POST", "/close", `{"session_id":7}`, nil); code != http.StatusUnprocessableEntity {
		t.Errorf("POST /close with a numeric session_id: %d %v, want 422", code, v)
	}

	// The default HTTP session, closed without naming it.
	strayReset(t, d)
	if code, v := d.Do("POST", "/close", "", nil); code != http.StatusOK || obj(t, v, "close")["closed"] != true {
		t.Fatalf("POST /close of the default session: %d %v", code, v)
	}
	d.WaitSessions(0)
	if code, v := d.Do("POST", "/close", "{}", nil); code != http.StatusOK || obj(t, v, "close")["closed"] != false {
		t.Errorf("POST /close with no default session: %d %v", code, v)
	}

	ws := dialRaw(t, d, "/ws", nil)
	obsData(t, ws.request(map[string]any{"type": "reset"}))
	ws.close()
}

// TestHTTPIdleTimeout: an HTTP session nobody uses ends after the idle
// timeout and frees its slot; the capacity message names the timeout.
func TestHTTPIdleTimeout(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, spec{Flags: []string{"--idle-timeout", "1s"}, Harness: agentCmd(t)})
	strayReset(t, d)
	d.WaitSessions(0) // bounded poll: the reaper must act within goneTimeout
	d.WaitLog(`"msg":"session ended"`, `"kind":"http"`, "idle for more than 1s")
	d.WaitTreeEmpty()

	id := strayReset(t, d)
	if msg := wsRefused(t, d); !strings.Contains(msg, "idle timeout (1s)") {
		t.Errorf("CAPACITY_REACHED message %q does not name the idle timeout", msg)
	}
	d.WaitSessions(0)
	if code, _ := d.Do("POST", "/step", `{"session_id":"`+id+`","action":{"message":"hi"}}`, nil); code != http.StatusNotFound {
		t.Errorf("POST /step on a reaped session: HTTP %d, want 404", code)
	}
}
