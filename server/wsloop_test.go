package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A /ws frame runs on the goroutine that read it; while a turn runs long,
// a follower reads the connection: the client's ping is answered before the
// turn ends, and a frame sent meanwhile is answered after the turn's
// observation, in order.
func TestWSLongTurnStillServed(t *testing.T) {
	ts := start(t, Options{})
	c := ts.ws(t, "/ws", nil)
	if r := roundTrip(t, c, `{"type":"reset"}`); r["type"] != frameTypeObs {
		t.Fatalf("reset: %v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type reply struct {
		typ string
		at  time.Time
	}
	replies := make(chan reply, 2)
	go func() { // the client's reader: it also takes the pongs
		defer close(replies)
		for range 2 {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m map[string]any
			json.Unmarshal(b, &m)
			typ, _ := m["type"].(string)
			replies <- reply{typ, time.Now()}
		}
	}()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"step","data":{"message":"sleep 1500ms;;reply done"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"state"}`)); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	err := c.Ping(pctx)
	pcancel()
	pinged := time.Now()
	if err != nil {
		t.Fatalf("ping during the turn: %v", err)
	}
	first, ok := <-replies
	if !ok || first.typ != frameTypeObs {
		t.Fatalf("first reply %+v, want the step's observation", first)
	}
	if !pinged.Before(first.at) {
		t.Errorf("the ping was answered at %v, after the turn's observation at %v", pinged, first.at)
	}
	if second, ok := <-replies; !ok || second.typ != frameTypeState {
		t.Fatalf("second reply %+v, want the state frame's", second)
	}
}
