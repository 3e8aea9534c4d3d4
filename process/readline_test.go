package process

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"
)

// shSpec runs script under sh with stdout read as lines.
func shSpec(script string) Spec {
	return Spec{Name: "sh", Path: "sh", Args: []string{"-c", script}, Env: DefaultEnviron(nil)}
}

func startSh(t *testing.T, s *Supervisor, spec Spec) *Process {
	t.Helper()
	p, err := s.Start(spec)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { p.Stop(context.Background(), 0) })
	return p
}

// readLine is ReadLine bounded by a generous timeout.
func readLine(t *testing.T, p *Process) (Line, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.ReadLine(ctx)
}

func TestReadLineInOrderThenEOF(t *testing.T) {
	s := newSup(t, Options{})
	p := startSh(t, s, shSpec(`printf 'cr\r\n\n'; seq 1 3000; printf 'tail'`))
	want := []string{"cr", ""}
	for i := 1; i <= 3000; i++ {
		want = append(want, strconv.Itoa(i))
	}
	want = append(want, "tail")
	total := 0
	for i, w := range want {
		l, err := readLine(t, p)
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		size := len(w)
		if w == "cr" {
			size++ // the CR is trimmed but counted
		}
		if string(l.Text) != w || l.TooLong || l.Size != size {
			t.Fatalf("line %d = %q (size %d, too long %v), want %q", i, l.Text, l.Size, l.TooLong, w)
		}
		total += len(w) + 1
	}
	for range 2 { // the end is sticky
		if l, err := readLine(t, p); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last line: %q, %v; want io.EOF", l.Text, err)
		}
	}
	// "cr\r\n" has a CR the line drops, "tail" no newline: they even out.
	if got, want := p.OutputBytes(), int64(total); got != want {
		t.Fatalf("OutputBytes = %d, want %d", got, want)
	}
}

func TestReadLineTextIsTheCallers(t *testing.T) {
	s := newSup(t, Options{})
	p := startSh(t, s, shSpec(`printf 'aaaa\nbbbb\n'`))
	first, err := readLine(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readLine(t, p); err != nil {
		t.Fatal(err)
	}
	if string(first.Text) != "aaaa" {
		t.Fatalf("the first line changed to %q after the next read", first.Text)
	}
}

func TestReadLineBoundsTooLongLines(t *testing.T) {
	s := newSup(t, Options{})
	spec := shSpec(`head -c 200000 /dev/zero | tr '\0' x; echo; head -c 1000 /dev/zero | tr '\0' y; echo; echo after`)
	spec.MaxLineBytes = 1000
	p := startSh(t, s, spec)
	l, err := readLine(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if !l.TooLong || l.Size != 200000 || len(l.Text) != 1000 || len(bytes.Trim(l.Text, "x")) != 0 {
		t.Fatalf("long line: too long %v, size %d, kept %d", l.TooLong, l.Size, len(l.Text))
	}
	if l, err = readLine(t, p); err != nil || l.TooLong || l.Size != 1000 || len(l.Text) != 1000 {
		t.Fatalf("line at the limit: too long %v, size %d, kept %d, %v", l.TooLong, l.Size, len(l.Text), err)
	}
	if l, err = readLine(t, p); err != nil || string(l.Text) != "after" {
		t.Fatalf("line after: %q, %v", l.Text, err)
	}
}

func TestReadLineKeepsPartialLineAcrossCancel(t *testing.T) {
	s := newSup(t, Options{})
	// One write puts "start\n" and "par" in the pipe together.
	p := startSh(t, s, shSpec(`printf 'start\npar'; read x; printf 'tial\nnext\n'`))
	if l, err := readLine(t, p); err != nil || string(l.Text) != "start" {
		t.Fatalf("first line %q, %v", l.Text, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if l, err := p.ReadLine(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadLine of a half line = %q, %v; want the deadline", l.Text, err)
	}
	if n := p.OutputBytes(); n != int64(len("start\npar")) {
		t.Fatalf("read %d bytes, want the half line read too", n)
	}
	if err := p.WriteLine(context.Background(), []byte("go")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partial", "next"} {
		if l, err := readLine(t, p); err != nil || string(l.Text) != want || l.Size != len(want) {
			t.Fatalf("got %q (size %d), %v; want %q", l.Text, l.Size, err, want)
		}
	}
}

func TestReadLineCancelReturnsPromptly(t *testing.T) {
	s := newSup(t, Options{})
	p := startSh(t, s, shSpec(`read x; echo "got $x"; read y`))
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(50*time.Millisecond, cancel)
	defer stop.Stop()
	start := time.Now()
	l, err := p.ReadLine(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadLine of a silent child = %q, %v; want context.Canceled", l.Text, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancelled ReadLine took %s", d)
	}
	// The cancel's past deadline does not stick to the next call.
	if err := p.WriteLine(context.Background(), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if l, err := p.ReadLine(context.Background()); err != nil || string(l.Text) != "got 1" {
		t.Fatalf("after a cancel: %q, %v", l.Text, err)
	}
}

func TestReadLineReleasedByStop(t *testing.T) {
	s := newSup(t, Options{})
	p := startReady(t, s, agentSpec(t))
	done := make(chan error, 1)
	go func() {
		_, err := p.ReadLine(context.Background())
		done <- err
	}()
	p.Stop(context.Background(), time.Second)
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("ReadLine pending at Stop: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending ReadLine not released by Stop")
	}
	if _, err := p.ReadLine(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("ReadLine after Stop: %v, want io.EOF", err)
	}
}

func TestReadLineReleasedBySupervisorClose(t *testing.T) {
	s, err := NewSupervisor(Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Start(shSpec(`echo ready; exec sleep 1000`))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := readLine(t, p); err != nil || string(l.Text) != "ready" {
		t.Fatalf("first line %q, %v", l.Text, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.ReadLine(context.Background())
		done <- err
	}()
	if err := s.Close(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("ReadLine pending at Close: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending ReadLine not released by Close")
	}
}

func TestLinesTakesOverFromReadLine(t *testing.T) {
	s := newSup(t, Options{})
	p := startSh(t, s, shSpec(`printf 'a\nb\nc'`))
	if l, err := readLine(t, p); err != nil || string(l.Text) != "a" {
		t.Fatalf("first line %q, %v", l.Text, err)
	}
	var got []string
	for l := range p.Lines() {
		got = append(got, string(l.Text))
	}
	if len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Fatalf("Lines after ReadLine gave %q, want [b c]", got)
	}
	if _, err := readLine(t, p); !errors.Is(err, ErrLinesMode) {
		t.Fatalf("ReadLine after Lines: %v, want ErrLinesMode", err)
	}
}

func TestOverlappingReadLineFails(t *testing.T) {
	s := newSup(t, Options{})
	p := startSh(t, s, shSpec(`read x; echo "got $x"; read y`))
	first := make(chan Line, 1)
	go func() {
		for {
			l, err := p.ReadLine(context.Background())
			if !errors.Is(err, ErrReadBusy) {
				first <- l
				return
			}
		}
	}()
	// Until the goroutine's read holds the reader, ours may hold it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
		_, err := p.ReadLine(short)
		cancelShort()
		if errors.Is(err, ErrReadBusy) {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Fatalf("overlapping ReadLine: %v, want ErrReadBusy", err)
		}
	}
	// Lines waits for the pending ReadLine, which keeps its line.
	lines := p.Lines()
	if err := p.WriteLine(ctx, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if l := <-first; string(l.Text) != "got 1" {
		t.Fatalf("pending ReadLine got %q", l.Text)
	}
	p.CloseStdin()
	if _, ok := <-lines; ok {
		t.Fatal("Lines gave a line the child never wrote")
	}
}
