package console

import "testing"

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
