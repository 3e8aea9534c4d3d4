package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/internal/testbin"
)

// harnessFlood opens a /harness socket, starts a turn that runs for a
// while, sends frames of size bytes until sent bytes are on the wire, and
// returns the daemon's live heap over what it was before the flood, with
// the turn still running; then it cancels the turn and returns the
// first want protocol errors that follow the turn's end.
func harnessFlood(t *testing.T, ts *testServer, size, sent, want int) (frames int, held int64, after []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := ts.ws(t, "/harness", nil)
	defer c.CloseNow()
	if m := read(t, c, ctx); m["type"] != "session_started" {
		t.Fatalf("first frame %v", m)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"message","content":"sleep 30s"}`)); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1024)
	go func() { // the pong below is read by a reader
		defer close(got)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			got <- b
		}
	}()
	time.Sleep(100 * time.Millisecond) // the turn runs
	before := int64(testbin.LiveHeap())
	frame := bytes.Repeat([]byte("x"), size)
	for n := 0; n < sent; n += size {
		if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
			t.Fatalf("frame %d: %v", frames, err)
		}
		frames++
	}
	// Every frame is read (a ping's pong comes after them all), then measured.
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping after the flood: %v", err)
	}
	held = int64(testbin.LiveHeap()) - before
	if want == 0 {
		return frames, held, nil // closing the socket ends the turn
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"cancel"}`)); err != nil {
		t.Fatal(err)
	}
	ended := false
	for b := range got {
		var f struct {
			Type string `json:"type"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		json.Unmarshal(b, &f)
		switch {
		case f.Type == "turn_complete":
			ended = true
		case ended && f.Type == frameTypeProtoError:
			if after = append(after, f.Data.Message); len(after) >= want {
				return frames, held, after
			}
		}
	}
	return frames, held, after
}

// TestHarnessSocketBacklogIsBounded: frames a /harness client sends while
// a turn runs are kept, to be handled after it (harnessTurn's backlog).
// Their bytes count against the frame limit (the queued bytes), but each
// frame also costs its record in the backlog, whatever its size, and a
// frame refused for the queued bytes is kept too (its record only): a
// client sending frames of one byte made the daemon hold some 50 bytes for
// each 7 it sent, for as long as the turn ran, without bound.
//
// Measured before the fix, with a frame limit of 1 MiB, during one turn: 7
// MB on the wire as 1,000,000 frames of one byte held 62.5 MB (sent in 3
// s: a turn of 10 minutes, some 12 GB); as 107 frames of 64 KiB (the
// control) 1.0 MB.
func TestHarnessSocketBacklogIsBounded(t *testing.T) {
	ts := start(t, Options{Mode: Production, MaxFrameBytes: 1 << 20, MaxSessions: 2})
	const wire = 7_000_000
	frames, control, _ := harnessFlood(t, ts, 64<<10, wire, 0)
	t.Logf("control: %d frames of 64 KiB during a turn: %d bytes held", frames, control)
	frames, attack, after := harnessFlood(t, ts, 1, wire/7, maxHarnessBacklog+1)
	t.Logf("attack: %d frames of 1 byte during a turn: %d bytes held; after the turn %d protocol errors", frames, attack, len(after))
	if control > 4<<20 {
		t.Fatalf("control: large frames held %d bytes, over the 1 MiB frame limit's bound", control)
	}
	if attack > 2*control+(4<<20) {
		t.Errorf("%d one-byte frames during a turn held %d bytes (%d frames of 64 KiB: %d)", frames, attack, wire/(64<<10)+1, control)
	}
	// Each kept frame is answered after the turn, and the dropped ones
	// are counted.
	if len(after) != maxHarnessBacklog+1 || !strings.Contains(after[0], fmt.Sprintf("%d frames sent during the turn were dropped", frames-maxHarnessBacklog)) {
		t.Errorf("after the turn: %d protocol errors %.3q; want the count of the dropped frames, then one per kept frame", len(after), after)
	}
}
