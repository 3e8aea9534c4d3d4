package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/harnessd/harnessd/server/internal/bounds"
	"github.com/prometheus/client_golang/prometheus"
)

// maxCloseReason is the most a close frame's reason may hold (RFC 6455:
// 125 bytes of payload, 2 of them the status code).
const maxCloseReason = 123

// closeReason fits reason in a close frame: whole sentences when it is too
// long (the full text is in the error frame sent before), else cut at a
// word with "…"; never a split UTF-8 sequence. The capacity message was
// cut mid-word ("To free a slot: close a session (WebSocket close").
func closeReason(reason string) string {
	if len(reason) <= maxCloseReason {
		return reason
	}
	head := reason[:maxCloseReason+1]
	if i := strings.LastIndex(head, ". "); i > 0 {
		return reason[:i+1]
	}
	const ellipsis = "…"
	head = reason[:maxCloseReason-len(ellipsis)+1]
	cut := strings.LastIndexByte(head, ' ')
	if cut <= 0 {
		cut = len(head) - 1
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
	}
	return strings.TrimRight(reason[:cut], " ") + ellipsis
}

// inbound is one frame read from a client, or a frame that was refused.
type inbound struct {
	data    []byte
	tooBig  int64 // bytes received when over the limit (data is nil)
	allowed int64
	queued  int64 // bytes of earlier frames still waiting, when that refused it
}

// wsConn is a server-side WebSocket with a reader at all times while a turn
// runs (so pings are answered and disconnects noticed): a long-lived one
// (readLoop) for /harness, the goroutine holding wsLoop's read role for
// /ws; serialised writes, and keepalive pings.
type wsConn struct {
	c       *websocket.Conn
	max     int64
	frames  chan inbound
	gone    chan struct{} // closed when the reader stops (peer gone or closed)
	readErr error
	// queued counts the bytes of frames read but not yet handled (in frames
	// or a handler's backlog); a frame that would take it past max is
	// refused (unless it is small: readFrame), so a client pipelining large
	// frames cannot pile them up.
	queued atomic.Int64
	ctx    context.Context // ends when the peer is gone
	cancel context.CancelFunc
	// turnCtx is the context of the turns the connection runs: ctx, ended
	// also by a /ws close request (wsLoop).
	turnCtx    context.Context
	cancelTurn context.CancelFunc
	wmu        sync.Mutex
	// first holds the start of the frame being read (readSmall); only the
	// goroutine holding the read role uses it.
	first []byte
	// received and sent count the frames' bytes for /metrics.
	received, sent prometheus.Counter
	// The deadlines of reads and writes (wswatch.go): a write runs for
	// at most wtimeout (wtimer, timedOut when it fired); inFlight counts
	// the reads and writes running, which the end of ctx interrupts.
	wtimeout time.Duration
	wtimer   *time.Timer
	timedOut atomic.Bool
	inFlight atomic.Int32
}

// accept upgrades the request. Compression stays off: frames are small JSON.
func (s *Server) accept(w http.ResponseWriter, r *http.Request, surface string) (*wsConn, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{})
	if err != nil {
		return nil, err
	}
	max := s.opts.MaxFrameBytes
	// The library's own limit is a hard backstop well above ours: frames
	// between the two are drained and answered with an error frame.
	c.SetReadLimit(max*4 + 1<<20)
	received, sent := s.metrics.Bytes(surface)
	wc := newWSConn(c, max, received, sent, writeTimeout)
	if surface != surfaceWS {
		// /ws reads its frames on the goroutine that runs them (wsLoop).
		go wc.readLoop()
	}
	if s.opts.PingInterval > 0 {
		go wc.pingLoop(s.opts.PingInterval)
	}
	return wc, nil
}

// newWSConn wraps an accepted connection: frames of at most max bytes,
// their bytes counted in received and sent, writes that end after
// timeout. Its caller starts the reader and the pings.
func newWSConn(c *websocket.Conn, max int64, received, sent prometheus.Counter, timeout time.Duration) *wsConn {
	ctx, cancel := context.WithCancel(context.Background())
	wc := &wsConn{c: c, max: max, frames: make(chan inbound, 16), gone: make(chan struct{}), ctx: ctx, cancel: cancel,
		received: received, sent: sent}
	wc.turnCtx, wc.cancelTurn = context.WithCancel(ctx)
	wc.watchConn(timeout)
	return wc
}

// readOne reads the next frame; on an error the connection is over: the
// error is kept for goneReason, gone is closed and ctx ended. Only one
// goroutine at a time may call it.
func (wc *wsConn) readOne() (inbound, error) {
	err := wc.enter()
	if err == nil {
		var in inbound
		in, err = wc.readIn()
		if err = wc.leave(err); err == nil {
			return in, nil
		}
	}
	wc.stopReading(err)
	return inbound{}, err
}

// readIn reads the next frame with a context that never ends: the end of
// wc.ctx interrupts it (watchConn).
func (wc *wsConn) readIn() (inbound, error) {
	_, r, err := wc.c.Reader(context.Background())
	if err != nil {
		return inbound{}, err
	}
	return wc.readFrame(r)
}

// stopReading says that nothing more is read: err (nil when the connection
// was closed on this side) is kept for goneReason, gone is closed and ctx
// ended. Only the goroutine holding the read role calls it, once.
func (wc *wsConn) stopReading(err error) {
	wc.readErr = err
	close(wc.gone)
	wc.cancel()
}

// readLoop is the reader of the surfaces that hand frames to a handler
// goroutine (/harness): frames go to wc.frames.
func (wc *wsConn) readLoop() {
	for {
		in, err := wc.readOne()
		if err != nil {
			return
		}
		select {
		case wc.frames <- in:
		case <-wc.ctx.Done():
			wc.stopReading(nil)
			return
		}
	}
}

// isCloseRequest reports whether data is a /ws close frame
// ({"type":"close"}).
func isCloseRequest(data []byte) bool {
	if !bytes.Contains(data, []byte(frameTypeClose)) {
		return false
	}
	f, werr := parseWSFrame(data)
	return werr == nil && f.Type == frameTypeClose
}

// readFrame reads one message, holding at most max bytes of it: the rest of
// a larger one is discarded unread into memory and the frame refused.
func (wc *wsConn) readFrame(r io.Reader) (inbound, error) {
	buf, err := wc.readSmall(r)
	if buf == nil && err == nil {
		// Longer than the first read: the rest is read bounded.
		r = io.MultiReader(bytes.NewReader(wc.first), r)
		buf, err = bounds.ReadCapped(r, 0, wc.max)
	}
	var big *bounds.TooLargeError
	switch {
	case errors.As(err, &big):
		n, err := io.Copy(io.Discard, r)
		wc.received.Add(float64(wc.max + 1 + n))
		if err != nil {
			return inbound{}, err
		}
		return inbound{tooBig: wc.max + 1 + n, allowed: wc.max}, nil
	case err != nil:
		wc.received.Add(float64(len(buf)))
		return inbound{}, err
	}
	n := int64(len(buf))
	wc.received.Add(float64(n))
	// A small frame is taken whatever is queued: a cancel or a close
	// request behind frames that filled the limit was refused unread, and
	// the turn it was to end ran on. Their number is bounded where they
	// wait (cap(wc.frames), maxHarnessBacklog), and so their bytes.
	if q := wc.queued.Load(); q > 0 && q+n > wc.max && n > smallFrame {
		return inbound{tooBig: n, allowed: wc.max - q, queued: q}, nil
	}
	wc.queued.Add(n)
	return inbound{data: buf}, nil
}

// smallFrame is what a frame's first read takes: a step frame fits, and is
// then kept in one allocation of its own size (ReadCapped starts with 4
// KiB, most of a turn's garbage).
const smallFrame = 512

// readSmall reads a frame that fits in smallFrame bytes (and the limit)
// into a copy of its exact size; buf and err are both nil when it is
// longer, its start then in wc.first.
func (wc *wsConn) readSmall(r io.Reader) (buf []byte, err error) {
	if wc.first == nil {
		wc.first = make([]byte, smallFrame)
	}
	n, err := io.ReadFull(r, wc.first[:cap(wc.first)])
	wc.first = wc.first[:n]
	switch {
	case (err == io.EOF || err == io.ErrUnexpectedEOF) && int64(n) <= wc.max:
		return bytes.Clone(wc.first), nil
	case err == nil || err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, nil
	}
	return nil, err
}

// release marks a frame as handled: its bytes no longer count as queued.
func (wc *wsConn) release(in inbound) {
	if in.data != nil {
		wc.queued.Add(-int64(len(in.data)))
	}
}

// pingLoop pings the peer; a peer that stops answering is disconnected.
func (wc *wsConn) pingLoop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-wc.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(wc.ctx, every)
			err := wc.c.Ping(ctx)
			cancel()
			if err != nil && wc.ctx.Err() == nil {
				wc.c.CloseNow()
				return
			}
		}
	}
}

// send writes one JSON frame.
func (wc *wsConn) send(v any) error { return wc.sendRaw(marshal(v)) }

// sendRaw writes one frame already encoded.
func (wc *wsConn) sendRaw(b []byte) error {
	wc.wmu.Lock()
	defer wc.wmu.Unlock()
	err := wc.writeTimed(func(ctx context.Context) error { return wc.c.Write(ctx, websocket.MessageText, b) })
	if err == nil {
		wc.sent.Add(float64(len(b)))
	}
	return err
}

// close ends the connection with a close frame.
func (wc *wsConn) close(code websocket.StatusCode, reason string) {
	wc.wmu.Lock()
	defer wc.wmu.Unlock()
	reason = closeReason(reason)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wc.c.Close(code, reason)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		wc.c.CloseNow()
	}
	wc.cancel()
}

// peerGone reports whether the reader stopped because the peer went away.
func (wc *wsConn) peerGone() bool {
	select {
	case <-wc.gone:
		return true
	default:
		return false
	}
}

func (wc *wsConn) goneReason() string {
	if wc.readErr == nil {
		return "connection closed"
	}
	if s := websocket.CloseStatus(wc.readErr); s != -1 {
		return fmt.Sprintf("client closed the connection (%d)", s)
	}
	if errors.Is(wc.readErr, context.Canceled) {
		return "connection closed"
	}
	return "client disconnected: " + wc.readErr.Error()
}

// tooBigError answers a frame over the limit, or one refused because
// earlier frames still wait.
func tooBigError(in inbound) *wireError {
	if in.queued > 0 {
		return &wireError{Code: codeValidation,
			Message: fmt.Sprintf("frame of %d bytes refused: %d bytes of earlier frames are still waiting (maximum %d bytes in all)", in.tooBig, in.queued, in.queued+in.allowed),
			Errors:  []fieldError{{Type: "too_long", Loc: []any{}, Msg: "too many bytes queued", Input: nil}}}
	}
	return &wireError{Code: codeValidation,
		Message: fmt.Sprintf("frame of %d bytes exceeds the maximum of %d bytes (--max-frame-bytes)", in.tooBig, in.allowed),
		Errors:  []fieldError{{Type: "too_long", Loc: []any{}, Msg: "frame too large", Input: nil}}}
}
