package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// rawWS is a WebSocket speaking raw frames, for checking exact wire shapes.
type rawWS struct {
	t testing.TB
	c *websocket.Conn
}

// dialRaw opens d.URL+path as a WebSocket.
func dialRaw(t testing.TB, d *daemon, path string, header http.Header) *rawWS {
	t.Helper()
	w, resp, err := tryDialRaw(t, d, path, header)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial %s: HTTP %d: %v", path, code, err)
	}
	return w
}

// tryDialRaw dials and returns the handshake response on failure.
func tryDialRaw(t testing.TB, d *daemon, path string, header http.Header) (*rawWS, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), frameTimeout)
	defer cancel()
	u := "ws://" + d.Addr + path
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: header, HTTPClient: d.client})
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(128 << 20)
	w := &rawWS{t: t, c: c}
	t.Cleanup(func() { c.CloseNow() })
	return w, resp, nil
}

// sendText writes one text frame.
func (w *rawWS) sendText(s string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), frameTimeout)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		w.t.Fatalf("send %.80q: %v", s, err)
	}
}

// send writes v as a JSON text frame.
func (w *rawWS) send(v any) {
	w.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		w.t.Fatal(err)
	}
	w.sendText(string(b))
}

// readRaw reads one frame.
func (w *rawWS) readRaw() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), frameTimeout)
	defer cancel()
	typ, b, err := w.c.Read(ctx)
	if err == nil && typ != websocket.MessageText {
		return nil, errors.New("binary frame from server")
	}
	return b, err
}

// read reads one frame and decodes it as an object.
func (w *rawWS) read() map[string]any {
	w.t.Helper()
	b, err := w.readRaw()
	if err != nil {
		w.t.Fatalf("read frame: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		w.t.Fatalf("frame is not a JSON object: %v: %s", err, b)
	}
	return m
}

// request sends v and reads the one reply.
func (w *rawWS) request(v any) map[string]any {
	w.t.Helper()
	w.send(v)
	return w.read()
}

// requestText sends a raw text frame and reads the one reply.
func (w *rawWS) requestText(s string) map[string]any {
	w.t.Helper()
	w.sendText(s)
	return w.read()
}

// expectClose reads until the server closes the connection and returns the
// close status (-1 when the connection ended without a close frame). Frames
// read meanwhile are returned too.
func (w *rawWS) expectClose() (websocket.StatusCode, string, []map[string]any) {
	w.t.Helper()
	var frames []map[string]any
	for {
		b, err := w.readRaw()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				w.t.Fatalf("server did not close the connection within %s", frameTimeout)
			}
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Reason, frames
			}
			return -1, err.Error(), frames
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		frames = append(frames, m)
	}
}

// close sends a normal close.
func (w *rawWS) close() {
	w.c.Close(websocket.StatusNormalClosure, "")
}

// errorData checks that f is an error frame with the code and returns its
// data.
func errorData(t testing.TB, f map[string]any, code string) map[string]any {
	t.Helper()
	if f["type"] != "error" {
		t.Fatalf("want an error frame %s, got %v", code, f)
	}
	data := obj(t, f["data"], "error data")
	if data["code"] != code {
		t.Fatalf("want error code %s, got %v", code, data)
	}
	if m, _ := data["message"].(string); m == "" {
		t.Fatalf("error frame without a message: %v", data)
	}
	return data
}

// obsData checks that f is an observation frame and returns its data.
func obsData(t testing.TB, f map[string]any) map[string]any {
	t.Helper()
	if f["type"] != "observation" {
		t.Fatalf("want an observation frame, got %v", f)
	}
	return checkObservation(t, f["data"])
}

// checkObservation checks OpenEnv's serialization (§4): observation,
// reward, done, and the top-level metadata sibling equal to
// observation.metadata. It returns the top-level object.
func checkObservation(t testing.TB, v any) map[string]any {
	t.Helper()
	data := obj(t, v, "observation data")
	for _, k := range []string{"observation", "reward", "done", "metadata"} {
		if _, ok := data[k]; !ok {
			t.Fatalf("observation lacks %q: %v", k, data)
		}
	}
	if _, ok := data["done"].(bool); !ok {
		t.Fatalf("done is not a boolean: %v", data["done"])
	}
	if r := data["reward"]; r != nil {
		if _, ok := r.(float64); !ok {
			t.Fatalf("reward is neither a number nor null: %v", r)
		}
	}
	inner := obj(t, data["observation"], "observation")
	a, _ := json.Marshal(inner["metadata"])
	b, _ := json.Marshal(data["metadata"])
	if string(a) != string(b) {
		t.Fatalf("top-level metadata differs from observation.metadata:\n%s\n%s", b, a)
	}
	return data
}

func meta(t testing.TB, obs map[string]any) map[string]any {
	t.Helper()
	return obj(t, obs["metadata"], "metadata")
}

// eventTypes lists the types of metadata.turn_events.
func eventTypes(t testing.TB, md map[string]any) []string {
	t.Helper()
	evs, ok := md["turn_events"].([]any)
	if !ok {
		t.Fatalf("metadata has no turn_events list: %v", md)
	}
	var out []string
	for _, e := range evs {
		ev := obj(t, e, "event")
		typ, _ := ev["type"].(string)
		if _, ok := ev["timestamp"].(float64); !ok {
			t.Fatalf("event without a numeric timestamp: %v", ev)
		}
		if _, ok := ev["data"].(map[string]any); !ok {
			t.Fatalf("event without a data object: %v", ev)
		}
		out = append(out, typ)
	}
	return out
}

// hasSubsequence reports whether want appears in got in order.
func hasSubsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

func stepFrame(msg string) map[string]any {
	return map[string]any{"type": "step", "data": map[string]any{"message": msg}}
}

func responseOf(t testing.TB, obs map[string]any) string {
	t.Helper()
	r, ok := meta(t, obs)["response"].(string)
	if !ok {
		t.Fatalf("no response in %v", obs)
	}
	return r
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// waitFile waits until path exists (a harness's sign that a turn runs).
func waitFile(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
