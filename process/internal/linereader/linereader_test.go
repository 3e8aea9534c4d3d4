package linereader

import (
	"context"
	"os"
	"testing"
	"time"
)

// countingPipe counts the read deadlines set on the pipe it wraps.
type countingPipe struct {
	*os.File
	set int
}

func (p *countingPipe) SetReadDeadline(t time.Time) error {
	p.set++
	return p.File.SetReadDeadline(t)
}

// TestReadsSetNoDeadlinePerTurn: lines read under contexts with deadlines
// of their own (a turn's each) set no read deadline on the pipe when
// nothing cancels a read: ctx's own timer ends a read as a cancel does.
// Each read here goes to the pipe (the line is not buffered yet), the path
// that used to set the pipe's deadline to ctx's at every turn.
func TestReadsSetNoDeadlinePerTurn(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	pipe := &countingPipe{File: r}
	lr := New(pipe, r, 1<<10, 1<<10)
	for turn := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute+time.Duration(turn)*time.Second)
		if _, err := w.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
		l, err := lr.Next(ctx)
		cancel()
		if err != nil || string(l.Text) != "line" {
			t.Fatalf("turn %d: %q, %v", turn, l.Text, err)
		}
	}
	if pipe.set > 1 { // the first read clears what may be on the pipe
		t.Fatalf("%d read deadlines set over 3 turns, want at most the first read's clearing", pipe.set)
	}
}

// TestReadEndsAtItsContextsDeadline: with no pipe deadline of its own, a
// read that waits still ends when ctx's deadline passes, keeps what it read
// of the line, and the next call finishes that line.
func TestReadEndsAtItsContextsDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	lr := New(r, r, 1<<10, 1<<10)
	w.Write([]byte("par"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := lr.Next(ctx); err != context.DeadlineExceeded {
		t.Fatalf("a read past its deadline: %v, want context.DeadlineExceeded", err)
	}
	w.Write([]byte("tial\n"))
	l, err := lr.Next(context.Background())
	if err != nil || string(l.Text) != "partial" {
		t.Fatalf("the next read: %q, %v, want the whole line", l.Text, err)
	}
}
