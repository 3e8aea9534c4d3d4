package console

import (
	"fmt"
	"strings"
	"sync"
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

// BenchmarkWebFeedPublish is the live feed's cost per event: one event
// record (a 100-byte text_output) encoded once and handed to each viewer,
// for 0, 1 and 8 viewers reading as fast as they can.
func BenchmarkWebFeedPublish(b *testing.B) {
	for _, viewers := range []int{0, 1, 8} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			var f webFeed
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for range viewers {
				v, unsubscribe := f.subscribe()
				defer unsubscribe()
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-v.ch:
						case <-stop:
							return
						}
					}
				}()
			}
			ev := wire.New(wire.OriginHarness, &wire.TextOutput{Text: strings.Repeat("x", 100)})
			ev.Turn = 3
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if f.active() {
					e := ev
					f.publish(Message{Type: "record", SessionID: "0b7c6a3e-5d7f-4f8e-9a51-3c2d1e0f9a8b",
						Record: &wire.Record{Kind: wire.RecordEvent, Time: e.Timestamp, Event: &e}})
				}
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
		})
	}
}
