package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/client"
)

// A reason too long for a close frame keeps whole sentences, else is cut
// at a word with "…", and is never a split UTF-8 sequence.
func TestCloseReasonFits(t *testing.T) {
	capacity := (&CapacityError{Active: 1, Max: 1, Idle: 10 * time.Minute}).Error()
	for _, c := range []struct{ in, want string }{
		{"short", "short"},
		{capacity, "Server at capacity: 1/1 sessions active. Cannot accept new connections."},
		{strings.Repeat("word ", 40), strings.TrimSpace(strings.Repeat("word ", 24)) + "…"},
	} {
		if got := closeReason(c.in); got != c.want {
			t.Errorf("closeReason(%.40q…) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, in := range []string{strings.Repeat("é", 100), strings.Repeat("x", 200), strings.Repeat("日本", 40) + " " + strings.Repeat("語", 40)} {
		got := closeReason(in)
		if len(got) > maxCloseReason || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Errorf("closeReason(%.20q…) = %q (%d bytes)", in, got, len(got))
		}
	}
}

// A client refused at capacity gets the whole message in the error frame
// and whole sentences as the close reason.
func TestCapacityRefusalCloseReason(t *testing.T) {
	ts := start(t, Options{})
	env, err := client.Dial(context.Background(), ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.Reset(context.Background(), client.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	c := ts.ws(t, "/ws", nil)
	r := read(t, c, context.Background())
	if msg, _ := data(r)["message"].(string); data(r)["code"] != codeCapacity || !strings.HasSuffix(msg, "or raise --max-sessions.") {
		t.Fatalf("%v", r)
	}
	_, _, err = c.Read(context.Background())
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "Server at capacity: 1/1 sessions active. Cannot accept new connections." {
		t.Errorf("close: %v", err)
	}
}
