package episode

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestTakeWaitsForAClosingEpisodesDisk: with no disk idle, take returns
// nil at once when no episode's disk is on its way back, and the disk of
// a closing episode (willReturn) once it is back.
func TestTakeWaitsForAClosingEpisodesDisk(t *testing.T) {
	var ds disks
	if d := ds.take(context.Background(), nil); d != nil {
		t.Fatal("take handed out a disk nobody gave back")
	}
	d := &disk{}
	ds.willReturn(d)
	got := make(chan *disk, 1)
	go func() { got <- ds.take(context.Background(), nil) }()
	giveBack(&ds, d)
	if g := <-got; g != d {
		t.Fatalf("take returned %v, want the disk given back", g)
	}
	if ds.returning != 0 {
		t.Fatalf("%d disks still counted as returning", ds.returning)
	}
}

// TestTakeBoundsItsWaitOnlyOnceNeeded: a prepared episode's take (needed
// not closed) waits for a closing episode's disk however long its harness
// takes to exit; once needed is closed (a reset waits for the episode) it
// waits returnWait at most, as a take with no needed channel does from
// the start (the control). The bound here has already passed (a closed
// channel), so a bounded take returns nil at once; the disk is given back
// only once the take waits for it.
func TestTakeBoundsItsWaitOnlyOnceNeeded(t *testing.T) {
	passed := make(chan time.Time)
	close(passed)
	closing := func() (*disks, *disk) {
		ds, d := &disks{after: passed}, &disk{}
		ds.willReturn(d)
		return ds, d
	}

	ds, _ := closing()
	if g := ds.take(context.Background(), nil); g != nil {
		t.Fatalf("control: a take needed from the start waited past its bound and got %v", g)
	}

	ds, d := closing()
	needed := make(chan struct{})
	got := make(chan *disk, 1)
	go func() { got <- ds.take(context.Background(), needed) }()
	waitingTake(ds)
	giveBack(ds, d)
	if g := <-got; g != d {
		t.Fatalf("a take not yet needed returned %v, want the disk given back whenever it came", g)
	}

	ds, _ = closing()
	go func() { got <- ds.take(context.Background(), needed) }()
	waitingTake(ds)
	close(needed)
	if g := <-got; g != nil {
		t.Fatalf("a take once needed waited past its bound and got %v", g)
	}
}

// waitingTake returns once a take waits for a disk of ds to come back.
func waitingTake(ds *disks) {
	for {
		ds.mu.Lock()
		waiting := ds.back != nil
		ds.mu.Unlock()
		if waiting {
			return
		}
		runtime.Gosched()
	}
}

// giveBack puts d among ds's idle disks as disks.put does.
func giveBack(ds *disks, d *disk) {
	ds.mu.Lock()
	ds.idle = append(ds.idle, d)
	ds.mu.Unlock()
	ds.returned(d)
}
