package console

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// TestWebFeedSlowViewer checks that publishing never waits for a viewer
// that reads nothing: past its buffer its messages are dropped and counted.
func TestWebFeedSlowViewer(t *testing.T) {
	var f webFeed
	slow, unsubscribe := f.subscribe()
	defer unsubscribe()
	for i := range viewerBuffer + 7 {
		f.publish(Message{Type: "session", SessionID: string(rune('a' + i%26))})
	}
	if n := slow.dropped.Load(); n != 7 {
		t.Errorf("dropped %d, want 7", n)
	}
	if len(slow.ch) != viewerBuffer {
		t.Errorf("buffered %d, want %d", len(slow.ch), viewerBuffer)
	}
	unsubscribe()
	if f.active() {
		t.Error("feed active after the last viewer left")
	}
}

// TestWebFeedBoundsAViewerByBytes checks that a viewer that reads nothing
// holds at most viewerBytes of large messages (observations of 3 MiB
// responses), the first always sent, the rest dropped and counted; and
// that what it takes makes room again. Eight messages are more than the
// bound holds (five); each costs most of a second to encode under the
// race detector (40 took 29 s).
func TestWebFeedBoundsAViewerByBytes(t *testing.T) {
	var f webFeed
	slow, unsubscribe := f.subscribe()
	defer unsubscribe()
	resp := strings.Repeat("r", 3<<20)
	const msgs = 8
	for range msgs {
		f.publish(Message{Type: "record", Record: &wire.Record{Kind: wire.RecordObservation,
			Observation: &wire.Observation{Metadata: wire.Metadata{Response: &resp}}}})
	}
	q := slow.queued.Load()
	if q > viewerBytes || len(slow.ch) < 1 || len(slow.ch) > viewerBytes/(3<<20) {
		t.Errorf("a slow viewer holds %d messages, %d bytes (bound %d)", len(slow.ch), q, viewerBytes)
	}
	if n := slow.dropped.Load(); n != int64(msgs-len(slow.ch)) {
		t.Errorf("dropped %d, want %d", n, msgs-len(slow.ch))
	}
	for len(slow.ch) > 0 {
		slow.received(<-slow.ch)
	}
	if q := slow.queued.Load(); q != 0 {
		t.Errorf("%d bytes counted queued after the viewer took every message", q)
	}
	f.publish(Message{Type: "session", SessionID: "a"})
	if len(slow.ch) != 1 {
		t.Errorf("the viewer that caught up got %d messages, want 1", len(slow.ch))
	}
}
