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
	// 200,000 frames (1.4 MB on the wire) held 12.5 MB before the fix;
	// a million, as measured, took over a minute to read under -race.
	frames, attack, after := harnessFlood(t, ts, 1, 200_000, maxHarnessBacklog+1)
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

// cancelAfter starts a long turn on a /harness socket, sends frames of
// 64 KiB of queued bytes first, then a cancel, and returns how long the
// turn took to end after the cancel and whether it says it was cancelled.
func cancelAfter(t *testing.T, ts *testServer, queued int) (time.Duration, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := ts.ws(t, "/harness", nil)
	defer c.CloseNow()
	if m := read(t, c, ctx); m["type"] != "session_started" {
		t.Fatalf("first frame %v", m)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"message","content":"sleep 20s;;reply late"}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the turn runs
	big := []byte(`{"type":"message","content":"` + strings.Repeat("x", 64<<10-31) + `"}`)
	for n := 0; n < queued; n += len(big) {
		if err := c.Write(ctx, websocket.MessageText, big); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"cancel"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		m := read(t, c, ctx)
		if m["type"] == "turn_complete" {
			c, _ := data(m)["cancelled"].(bool)
			return time.Since(t0), c
		}
	}
}

// TestHarnessCancelBehindQueuedFramesIsTaken: {"type":"cancel"} interrupts
// a /harness turn; but frames sent during the turn wait with their bytes
// counted against the frame limit, and once they had reached it every
// later frame was refused unread, the cancel among them: the turn ran to
// its end. Small frames (a cancel is 17 bytes) are now taken whatever is
// queued; their number is bounded by maxHarnessBacklog.
//
// Measured before the fix, frame limit 1 MiB: a cancel after 16 pipelined
// messages of 64 KiB was never seen, the 20 s turn ended on its own 19.9 s
// later, not cancelled; the control, a cancel with nothing queued, ended it
// in 0.9 ms.
func TestHarnessCancelBehindQueuedFramesIsTaken(t *testing.T) {
	ts := start(t, Options{Mode: Production, MaxFrameBytes: 1 << 20, MaxSessions: 2})
	took, cancelled := cancelAfter(t, ts, 0)
	t.Logf("control: a cancel with nothing queued: the turn ended in %v, cancelled %v", took, cancelled)
	if !cancelled || took > 5*time.Second {
		t.Fatalf("control: the cancel did not end the turn (%v, cancelled %v)", took, cancelled)
	}
	took, cancelled = cancelAfter(t, ts, 1<<20)
	t.Logf("attack: a cancel behind 1 MiB of queued messages: the turn ended in %v, cancelled %v", took, cancelled)
	if !cancelled || took > 5*time.Second {
		t.Errorf("a cancel behind 1 MiB of queued frames was not taken: the turn ended in %v, cancelled %v", took, cancelled)
	}
}
