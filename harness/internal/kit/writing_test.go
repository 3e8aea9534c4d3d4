package kit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMessageWrite: a waiter taken while the write is in progress returns
// once it ends, not before; an idle one at once; a cancelled one with the
// context's error.
func TestMessageWrite(t *testing.T) {
	var w MessageWrite
	if w.Pending() != nil {
		t.Fatal("the zero value has a write in progress")
	}
	if err := Wait(context.Background(), w.Pending()); err != nil {
		t.Fatal(err)
	}
	w.Begin()
	pending := w.Pending()
	done := make(chan error, 1)
	go func() { done <- Wait(context.Background(), pending) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned before the write ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	w.End()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.Pending() != nil {
		t.Fatal("still pending after End")
	}
	w.End() // idle: no panic
	w.Begin()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, w.Pending()); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
}
