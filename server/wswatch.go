package server

import (
	"context"
	"fmt"
	"time"
)

// A connection's reads and writes end when its context does, and a write
// when it has run for writeTimeout, as a context given to the websocket
// library per call would make them; but such a context costs, per frame,
// a timer context and the library's context.AfterFunc for each read and
// write (allocations, and a registration with the parent context). Here
// the library gets a context that never ends, and the connection has one
// timer, re-armed for each write, and one AfterFunc of its context: either
// closes the connection (CloseNow) while a read or write is in flight,
// which ends it with an error, as the library's own timeout does.

// watchConn arms the connection's write timer (stopped until a write)
// and its context's AfterFunc. The AfterFunc runs once, when wc.ctx ends.
func (wc *wsConn) watchConn(timeout time.Duration) {
	wc.wtimeout = timeout
	wc.wtimer = time.AfterFunc(timeout, func() {
		wc.timedOut.Store(true)
		wc.c.CloseNow()
	})
	wc.wtimer.Stop()
	context.AfterFunc(wc.ctx, func() {
		if wc.inFlight.Load() > 0 {
			wc.c.CloseNow()
		}
	})
}

// enter marks a read or write in flight, or returns the context's error
// when it has ended. Marking first and then checking means that either
// this sees the context ended or its AfterFunc sees the call in flight.
func (wc *wsConn) enter() error {
	wc.inFlight.Add(1)
	if err := wc.ctx.Err(); err != nil {
		wc.inFlight.Add(-1)
		return err
	}
	return nil
}

// leave ends what enter began; err is the call's error, returned as the
// context's when that ended meanwhile (as the library reports it).
func (wc *wsConn) leave(err error) error {
	wc.inFlight.Add(-1)
	if err != nil && wc.ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", wc.ctx.Err(), err)
	}
	return err
}

// writeTimed writes b with the write timer armed: a write still blocked
// at wc.wtimeout (a peer that stopped reading) closes the connection and
// returns an error matching context.DeadlineExceeded.
func (wc *wsConn) writeTimed(write func(context.Context) error) error {
	if err := wc.enter(); err != nil {
		return err
	}
	wc.wtimer.Reset(wc.wtimeout)
	err := write(context.Background())
	if !wc.wtimer.Stop() && wc.timedOut.Load() {
		err = fmt.Errorf("websocket write: no progress in %s: %w (%w)", wc.wtimeout, context.DeadlineExceeded, err)
	}
	return wc.leave(err)
}
