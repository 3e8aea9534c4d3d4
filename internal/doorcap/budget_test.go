package doorcap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBudgetTakesDeclaredLengthAtOnce: a body with a Content-Length takes
// it from the budget when opened, before a byte is read, and is refused at
// once when it does not fit; Release gives it back.
func TestBudgetTakesDeclaredLengthAtOnce(t *testing.T) {
	b := NewBudget(100, -1, "test", nil)
	open := func(n int) (*Body, error) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", n)))
		return b.Open(httptest.NewRecorder(), r)
	}
	first, err := open(60)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Stats().InFlight; got != 60 {
		t.Fatalf("in flight %d after opening a 60-byte body, want 60", got)
	}
	_, err = open(41)
	var spent *BodyBudgetError
	if !errors.As(err, &spent) || !errors.Is(err, ErrBodyBudget) || spent.Max != 100 {
		t.Fatalf("a 41-byte body beside 60 of 100: %v, want a *BodyBudgetError of 100", err)
	}
	if !strings.Contains(err.Error(), "100 bytes") || !strings.Contains(err.Error(), ReasonBodies) {
		t.Errorf("refusal %q names neither the budget nor the reason", err)
	}
	second, err := open(40) // the control: what fits is taken
	if err != nil {
		t.Fatal(err)
	}
	if data, err := io.ReadAll(first); err != nil || len(data) != 60 {
		t.Fatalf("read %d bytes, %v", len(data), err)
	}
	first.Release()
	first.Release() // twice is once
	second.Release()
	if s := b.Stats(); s.InFlight != 0 || s.Refused != 1 {
		t.Errorf("stats %+v after release, want nothing in flight and 1 refused", s)
	}
}

// TestBudgetTakesChunkedBytesAsRead: a body of unknown length takes its
// bytes as they are read and fails once they do not fit, beside another
// body holding part of the budget; released, the budget is whole again.
func TestBudgetTakesChunkedBytesAsRead(t *testing.T) {
	b := NewBudget(1000, -1, "test", nil)
	chunked := func(n int) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", io.MultiReader(strings.NewReader(strings.Repeat("x", n))))
		r.ContentLength = -1
		return r
	}
	held, err := b.Open(nil, chunked(600))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(held); err != nil {
		t.Fatalf("600 of 1000: %v", err)
	}
	if got := b.Stats().InFlight; got != 600 {
		t.Fatalf("in flight %d, want 600", got)
	}
	over, err := b.Open(nil, chunked(500))
	if err != nil {
		t.Fatalf("opening a chunked body takes nothing yet: %v", err)
	}
	if _, err := io.ReadAll(over); !errors.Is(err, ErrBodyBudget) {
		t.Fatalf("500 more of 1000 with 600 held: %v, want ErrBodyBudget", err)
	}
	over.Release()
	if got := b.Stats().InFlight; got != 600 {
		t.Fatalf("in flight %d after the refused body's release, want 600", got)
	}
	held.Release()
	again, _ := b.Open(nil, chunked(1000)) // the control: the whole budget fits
	if data, err := io.ReadAll(again); err != nil || len(data) != 1000 {
		t.Fatalf("1000 of 1000: %d bytes, %v", len(data), err)
	}
	again.Release()
}

// TestBudgetDropsStalledBody: a body that stops arriving is dropped at the
// read timeout with a *BodyTimeoutError, its bytes back in the budget,
// and the server's own reads are not left under the deadline: the same
// connection's next request, sent after it, is served.
func TestBudgetDropsStalledBody(t *testing.T) {
	b := NewBudget(1<<20, 300*time.Millisecond, "test", nil)
	errs := make(chan error, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := b.Open(w, r)
		if err != nil {
			errs <- err
			return
		}
		defer in.Release()
		_, err = io.ReadAll(in)
		errs <- err
		if err != nil {
			w.Header().Set("Connection", "close")
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		// Past the deadline the body had: the connection must still read.
		time.Sleep(400 * time.Millisecond)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	// The control first: a whole body is read, and answered after the
	// deadline it had while being read.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("whole body: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	// The same connection again, with a body that stops short.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	err = <-errs
	var slow *BodyTimeoutError
	if !errors.As(err, &slow) || !errors.Is(err, os.ErrDeadlineExceeded) || resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d %v, want 408 and a *BodyTimeoutError", resp.StatusCode, err)
	}
	if s := b.Stats(); s.InFlight != 0 || s.Expired != 1 {
		t.Errorf("stats %+v, want nothing in flight and 1 expired", s)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64 MiB", 16 << 10: "16 KiB", 1000: "1000 bytes", 0: "0 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestChargeHoldsWhatDecodingMakes: a body's decoded form is charged with
// it (beyond FreeValues containers) and given back with it; a charge
// past the whole budget is a *DecodeCostError (413, never servable), one
// past what is free now the budget's retryable refusal.
func TestChargeHoldsWhatDecodingMakes(t *testing.T) {
	b := NewBudget(10_000, -1, "test", nil)
	open := func() *Body {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 100)))
		x, err := b.Open(httptest.NewRecorder(), r)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	few := open()
	if err := few.ChargeValues(FreeValues, 0); err != nil || b.Stats().InFlight != 100 {
		t.Fatalf("%d containers: %v, %d in flight, want free", FreeValues, err, b.Stats().InFlight)
	}
	few.Release()
	x := open()
	if err := x.ChargeValues(FreeValues+10, 0); err != nil || b.Stats().InFlight != 100+10*DefaultDecodedValueBytes {
		t.Fatalf("10 containers past the free ones: %v, %d in flight", err, b.Stats().InFlight)
	}
	y := open()
	err := y.ChargeValues(FreeValues+10, 0)
	var spent *BodyBudgetError
	if !errors.As(err, &spent) {
		t.Errorf("a charge past what is free now: %v, want a *BodyBudgetError", err)
	}
	err = y.ChargeValues(FreeValues+20, 0)
	var costly *DecodeCostError
	w := httptest.NewRecorder()
	if status, _, _ := BodyRefusal(w, err); !errors.As(err, &costly) || status != http.StatusRequestEntityTooLarge ||
		w.Header().Get("X-Harnessd-Refused") != ReasonDecodeCost || !strings.Contains(err.Error(), ReasonDecodeCost) {
		t.Errorf("a charge past the whole budget: %v (%d), want a *DecodeCostError, 413 %s", err, status, ReasonDecodeCost)
	}
	x.Release()
	y.Release()
	if s := b.Stats(); s.InFlight != 0 {
		t.Errorf("%d in flight after release, want 0", s.InFlight)
	}
}
