package episode

import (
	"context"
	"testing"
)

// TestTakeWaitsForAClosingEpisodesDisk: with no disk idle, take returns
// nil at once when no episode's disk is on its way back, and the disk of
// a closing episode (willReturn) once it is back.
func TestTakeWaitsForAClosingEpisodesDisk(t *testing.T) {
	var ds disks
	if d := ds.take(context.Background()); d != nil {
		t.Fatal("take handed out a disk nobody gave back")
	}
	d := &disk{}
	ds.willReturn(d)
	got := make(chan *disk, 1)
	go func() { got <- ds.take(context.Background()) }()
	ds.mu.Lock()
	ds.idle = append(ds.idle, d)
	ds.mu.Unlock()
	ds.returned(d)
	if g := <-got; g != d {
		t.Fatalf("take returned %v, want the disk given back", g)
	}
	if ds.returning != 0 {
		t.Fatalf("%d disks still counted as returning", ds.returning)
	}
}
