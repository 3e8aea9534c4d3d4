package doorcap

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// DefaultBodyReadTimeout bounds reading one request body whole, from the
// handler's first read (Budget.Open) to its end: a body stalled longer is
// dropped and its bytes return to the budget. Agents on the sandbox's
// loopback send even a body at a door's cap in milliseconds.
const DefaultBodyReadTimeout = 30 * time.Second

// ReasonBodies: the door's request bodies in flight hold its byte budget
// (Budget), as a refusal's X-Harnessd-Refused and message say.
const ReasonBodies = "door_body_budget"

// ErrBodyBudget is what every *BodyBudgetError wraps.
var ErrBodyBudget = errors.New("request bodies in flight hold the door's budget")

// BodyBudgetError refuses a request body the door's Budget has no room
// for.
type BodyBudgetError struct {
	// Door names the door; Max is its budget in bytes.
	Door string
	Max  int64
}

// Error names the door, the budget and ReasonBodies.
func (e *BodyBudgetError) Error() string {
	return fmt.Sprintf("the %s door's request bodies in flight hold its budget of %s (%s); retry once a request ends",
		e.Door, Size(e.Max), ReasonBodies)
}

// Unwrap returns ErrBodyBudget.
func (e *BodyBudgetError) Unwrap() error { return ErrBodyBudget }

// ReasonDecodeCost: a request body whose decoded form would cost more than
// the door's whole budget (Body.Charge) was refused.
const ReasonDecodeCost = "door_decode_cost"

// DecodeCostError refuses a request body whose bytes and what decoding it
// makes (Body.Charge) would take more than the door's whole budget: it
// could never be served, so it is refused for good (413), not retried.
type DecodeCostError struct {
	// Door names the door; Max is its budget, Cost what the body would
	// take of it in bytes (its own and its decoded form's).
	Door      string
	Max, Cost int64
}

// Error names the door, the cost, the budget and ReasonDecodeCost.
func (e *DecodeCostError) Error() string {
	return fmt.Sprintf("the %s door refused a request body that would take %s of its budget of %s once decoded (%s): too many JSON objects, arrays and array elements for its size",
		e.Door, Size(e.Cost), Size(e.Max), ReasonDecodeCost)
}

// BodyTimeoutError drops a request body not read whole within the door's
// body read timeout.
type BodyTimeoutError struct {
	// Door names the door; Timeout is its body read timeout.
	Door    string
	Timeout time.Duration
	// Err is the read's error (it wraps os.ErrDeadlineExceeded).
	Err error
}

// Error names the door and the timeout.
func (e *BodyTimeoutError) Error() string {
	return fmt.Sprintf("the %s door did not receive the request body within %s: %v", e.Door, e.Timeout, e.Err)
}

// Unwrap returns the read's error.
func (e *BodyTimeoutError) Unwrap() error { return e.Err }

// Size formats a byte count for a refusal: whole mebibytes or kibibytes
// as such, anything else in bytes.
func Size(n int64) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Budget bounds the bytes of request bodies one door holds at once, across
// all its connections: each connection's body is bounded by the door's own
// cap, but without a budget a harness could hold MaxConns bodies just
// under it, every one stalled before its last byte (gigabytes per
// episode, outside the harness's memory limit). A body takes its bytes
// from the budget as it is read (Open, Body.Read) and gives them back when
// its handler is done with it (Body.Release); a body the budget has no
// room for fails at once with a *BodyBudgetError, never waits. Create it
// with NewBudget; it is safe for concurrent use.
type Budget struct {
	max     int64
	timeout time.Duration
	door    string
	log     *slog.Logger

	used    atomic.Int64
	refused atomic.Uint64
	expired atomic.Uint64
}

// NewBudget returns the body budget of a door named door: limit bytes in
// flight at once (at least 1), each body read whole within timeout (zero:
// DefaultBodyReadTimeout; negative: no deadline). log receives refusals:
// the first at warn, later ones at debug when their count reaches a power
// of two; nil discards them.
func NewBudget(limit int64, timeout time.Duration, door string, log *slog.Logger) *Budget {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if timeout == 0 {
		timeout = DefaultBodyReadTimeout
	}
	Expect(door, ReasonBodies, ReasonBodyTimeout, ReasonDecodeCost)
	return &Budget{max: max(limit, 1), timeout: timeout, door: door, log: log}
}

// Max returns the budget in bytes.
func (b *Budget) Max() int64 { return b.max }

// Timeout returns the body read timeout (negative: none).
func (b *Budget) Timeout() time.Duration { return b.timeout }

// BudgetStats counts a door's body budget.
type BudgetStats struct {
	// InFlight is the bytes held now by bodies being read or handled.
	InFlight int64
	// Refused counts bodies refused for want of room; Expired those
	// dropped at the body read timeout.
	Refused, Expired uint64
}

// Stats returns the budget's counts now.
func (b *Budget) Stats() BudgetStats {
	return BudgetStats{InFlight: b.used.Load(), Refused: b.refused.Load(), Expired: b.expired.Load()}
}

// take takes n bytes if the budget has room for them.
func (b *Budget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// spent counts a refusal, logs it and returns its error.
func (b *Budget) spent() error {
	err := &BodyBudgetError{Door: b.door, Max: b.max}
	CountRefusal(b.door, ReasonBodies)
	switch n := b.refused.Add(1); {
	case n == 1:
		b.log.Warn("door refused a request body", "door", b.door, "reason", ReasonBodies, "detail", err.Error(), "in_flight", b.used.Load())
	case n&(n-1) == 0:
		b.log.Debug("door refusing request bodies", "door", b.door, "reason", ReasonBodies, "refused", n, "in_flight", b.used.Load())
	}
	return err
}

// Open starts reading r's body under the budget, and its read deadline
// (the connection's, through http.ResponseController, where w has one).
// A declared Content-Length is taken from the budget at once — the server
// never lets the body run past it — and refused at once when it does not
// fit; it is never allocated. A body of unknown length (chunked) takes its
// bytes as they arrive. The caller reads the returned Body instead of
// r.Body (bounded on its own, e.g. by http.MaxBytesReader) and must call
// Release when done with the body's bytes; on error nothing is held.
func (b *Budget) Open(w http.ResponseWriter, r *http.Request) (*Body, error) {
	x := &Body{b: b, r: r.Body}
	if r.Body == nil || r.Body == http.NoBody {
		x.r = http.NoBody
		return x, nil
	}
	if n := r.ContentLength; n > 0 {
		if !b.take(n) {
			return nil, b.spent()
		}
		x.held = n
	}
	if b.timeout > 0 && w != nil {
		x.rc = http.NewResponseController(w)
		if x.rc.SetReadDeadline(time.Now().Add(b.timeout)) != nil {
			x.rc = nil // not a connection's writer (a test's recorder): no deadline to keep
		}
	}
	return x, nil
}

// Body is one request body read under its door's Budget. It is used by
// one goroutine at a time, its handler's.
type Body struct {
	b    *Budget
	r    io.Reader
	rc   *http.ResponseController // set while the read deadline is
	held int64                    // bytes taken from the budget
	read int64
	err  error // the budget's refusal, once
}

// Read reads the body, taking the bytes that arrive beyond those already
// held from the budget. When the budget has no room it fails with a
// *BodyBudgetError (and keeps failing); a read past the deadline with a
// *BodyTimeoutError.
func (x *Body) Read(p []byte) (int, error) {
	if x.err != nil {
		return 0, x.err
	}
	n, err := x.r.Read(p)
	x.read += int64(n)
	if over := x.read - x.held; over > 0 {
		if !x.b.take(over) {
			x.err = x.b.spent()
			x.endDeadline()
			return n, x.err
		}
		x.held += over
	}
	if err != nil {
		x.endDeadline()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			x.b.expired.Add(1)
			CountRefusal(x.b.door, ReasonBodyTimeout)
			x.b.log.Debug("door dropped a stalled request body", "door", x.b.door, "timeout", x.b.timeout, "read", x.read)
			err = &BodyTimeoutError{Door: x.b.door, Timeout: x.b.timeout, Err: err}
		}
	}
	return n, err
}

// Charge takes n more bytes from the budget for the body, read whole, for
// what decoding it makes (a door's estimate, e.g. per JSON container:
// wire.DecodedValues), held until Release like the body's own. When the
// budget has no room now it fails with a *BodyBudgetError (retryable);
// when the body and n would exceed the whole budget, with a
// *DecodeCostError (never servable).
func (x *Body) Charge(n int64) error {
	if n <= 0 {
		return nil
	}
	if cost := x.held + n; cost > x.b.max {
		CountRefusal(x.b.door, ReasonDecodeCost)
		err := &DecodeCostError{Door: x.b.door, Max: x.b.max, Cost: cost}
		x.b.log.Debug("door refused a request body's decoding", "door", x.b.door, "reason", ReasonDecodeCost, "detail", err.Error())
		return err
	}
	if !x.b.take(n) {
		return x.b.spent()
	}
	x.held += n
	return nil
}

// DefaultDecodedValueBytes is what a door charges its budget by default
// for each JSON object, array or array element of a body besides the
// body's bytes (ChargeValues, wire.DecodedValues): decoding makes a
// struct, a map, a slice or a slice element of each, whatever its size on
// the wire. Decoded into plain Go values (map[string]any, as mcp-go does a
// tool's arguments) 2 MiB of empty objects ({},) made 127 MiB, about 190
// bytes an element; a door that decodes into typed structs charges more
// (the model gateway: DecodedValueBytes of its own). An ordinary request
// has a value per few hundred bytes or fewer.
const DefaultDecodedValueBytes = 512

// FreeValues is how many JSON values of a body ChargeValues leaves
// uncharged: an ordinary request's few dozen decode into a few kilobytes,
// which a small budget (a test's, a door of kilobytes) must not refuse.
const FreeValues = 32

// ChargeValues charges n JSON values (wire.DecodedValues of the body)
// beyond FreeValues at each bytes apiece (DefaultDecodedValueBytes when
// not positive): Charge.
func (x *Body) ChargeValues(n int, each int64) error {
	if each <= 0 {
		each = DefaultDecodedValueBytes
	}
	return x.Charge(int64(max(n-FreeValues, 0)) * each)
}

// endDeadline clears the read deadline Open set: the server's own reads
// (its check for a closed connection while the handler answers, the next
// request's header) follow their own timeouts.
func (x *Body) endDeadline() {
	if x.rc != nil {
		_ = x.rc.SetReadDeadline(time.Time{})
		x.rc = nil
	}
}

// Release gives the body's bytes back to the budget and clears the read
// deadline; the body must not be read after it. It may be called more
// than once.
func (x *Body) Release() {
	x.endDeadline()
	if x.held > 0 {
		x.b.used.Add(-x.held)
		x.held = 0
	}
	x.read = 0
	if x.err == nil {
		x.err = errors.New("doorcap: request body read after its release")
	}
}

// BodyRefusal sets on w the headers of the answer to a body err refused
// (the budget: 503 with Retry-After and X-Harnessd-Refused; a decoded
// form past the whole budget: 413 with X-Harnessd-Refused; the read
// timeout: 408, the connection closed) and returns its status and message;
// ok is false for any other error. The door writes the answer in its own
// shape.
func BodyRefusal(w http.ResponseWriter, err error) (status int, msg string, ok bool) {
	var spent *BodyBudgetError
	var slow *BodyTimeoutError
	var costly *DecodeCostError
	switch {
	case errors.As(err, &costly):
		w.Header().Set("X-Harnessd-Refused", ReasonDecodeCost)
		return http.StatusRequestEntityTooLarge, costly.Error(), true
	case errors.As(err, &spent):
		w.Header().Set("Retry-After", "1")
		w.Header().Set("X-Harnessd-Refused", ReasonBodies)
		return http.StatusServiceUnavailable, spent.Error(), true
	case errors.As(err, &slow):
		w.Header().Set("Connection", "close")
		return http.StatusRequestTimeout, slow.Error(), true
	}
	return 0, "", false
}
