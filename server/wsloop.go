package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// followTick is how often a server looks for /ws frames that run long: a
// frame still running at two ticks in a row (after followTick to twice
// that) gets a follower goroutine to read the connection meanwhile (pings,
// close requests, a vanished peer, frames sent ahead). A turn of the test
// agent is over well before that, so a turn's hot path stays on one
// goroutine (no hand-off, no thread woken for a reader, issue 28); a longer
// turn still has its connection served within twice this bound. It orders
// nothing: whatever its value, every frame is answered in order and a close
// request or a vanished peer abandons the running turn; it only bounds how
// late. One ticker per server (followers), not a timer per frame: arming a
// timer that becomes the earliest wakes the runtime's network poller, which
// cost more than the hand-off it saved.
const followTick = 20 * time.Millisecond

// followIdle is how many ticks without a running frame the followers'
// goroutine waits before it ends (the next frame starts it again).
const followIdle = 10

// followers watches a server's running /ws frames (followTick).
type followers struct {
	mu      sync.Mutex
	running map[*wsLoop]uint64 // loop -> its frame's number when last seen
	active  bool               // the watching goroutine runs
	quit    <-chan struct{}
}

func newFollowers(quit <-chan struct{}) *followers {
	return &followers{running: map[*wsLoop]uint64{}, quit: quit}
}

// begin registers l's frame number n as running.
func (f *followers) begin(l *wsLoop, n uint64) {
	f.mu.Lock()
	f.running[l] = n - 1 // not seen yet
	start := !f.active
	f.active = true
	f.mu.Unlock()
	if start {
		go f.watch()
	}
}

// done says l's frame is over.
func (f *followers) done(l *wsLoop) {
	f.mu.Lock()
	delete(f.running, l)
	f.mu.Unlock()
}

// watch starts a follower for each frame seen running at two ticks in a
// row; it ends after followIdle ticks without a frame, or at the server's
// quit.
func (f *followers) watch() {
	t := time.NewTicker(followTick)
	defer t.Stop()
	idle := 0
	var long []*wsLoop
	for {
		select {
		case <-t.C:
		case <-f.quit:
			f.mu.Lock()
			f.active = false
			f.mu.Unlock()
			return
		}
		long = long[:0]
		f.mu.Lock()
		if len(f.running) == 0 {
			if idle++; idle >= followIdle {
				f.active = false
				f.mu.Unlock()
				return
			}
		} else {
			idle = 0
		}
		for l, seen := range f.running {
			n := l.frame.Load()
			if n == seen {
				long = append(long, l)
				delete(f.running, l)
				continue
			}
			f.running[l] = n
		}
		f.mu.Unlock()
		for _, l := range long {
			go l.startFollower()
		}
	}
}

// wsLoop runs a /ws connection's frames on the goroutine that read them
// (leader/follower): the goroutine holding the read role reads a frame and,
// when no other frame is being handled, handles it itself; if that takes
// long (followTick) a follower goroutine takes over the read role,
// queueing what it reads (in order, at most cap(wc.frames) ahead) for the
// handler, which runs the queue before it gives up. A handler that finds a
// follower reading when it is done ends; otherwise it reads on. At most two
// goroutines serve a connection, the HTTP handler's among them.
type wsLoop struct {
	wc *wsConn
	// handle answers one frame (a refused one too) and releases it; false
	// is a close request: the connection is to end (end("")).
	handle func(in inbound) bool
	// end runs once when the connection is over, on whichever goroutine
	// saw that last; why says how it ended ("" for a close request).
	end func(why string)

	mu      sync.Mutex
	busy    bool // a goroutine is handling a frame
	reading bool // a goroutine holds the read role
	pending int  // frames read while busy, on or going onto wc.frames
	held    bool // a close request was queued: nothing more is read
	gone    bool // the reader saw the connection end while busy
	quit    bool // the server asked the connection to close while busy
	over    bool // end ran (or is running)
	// watch starts a follower when a frame runs long; frame numbers the
	// frames handled, so that it tells one long frame from two short ones.
	watch *followers
	frame atomic.Uint64
	// unwatch ends the watch of the server's shutdown (watchQuit).
	unwatch func() bool
}

func newWSLoop(wc *wsConn, watch *followers, handle func(inbound) bool, end func(string)) *wsLoop {
	return &wsLoop{wc: wc, watch: watch, handle: handle, end: end, reading: true}
}

func (l *wsLoop) lock()   { l.mu.Lock() }
func (l *wsLoop) unlock() { l.mu.Unlock() }

// run serves the connection on the calling goroutine, which holds the read
// role, until the connection ends or another goroutine reads it.
func (l *wsLoop) run() {
	for {
		in, err := l.wc.readOne()
		if err != nil {
			l.lock()
			l.reading = false
			if l.busy {
				l.gone = true // the handler ends the connection
				l.unlock()
				return
			}
			l.unlock()
			l.finish(l.wc.goneReason())
			return
		}
		closing := isCloseRequest(in.data)
		if closing {
			// A running turn is abandoned, as when the peer goes away;
			// then nothing more is read — the peer's close frame
			// included, which the library would answer at once — until
			// the session is ended and the connection closed: the
			// client's close handshake completes only once its session is
			// gone, so that it may reconnect at once to a free slot.
			l.wc.cancelTurn()
		}
		l.lock()
		if l.busy {
			l.pending++
			l.held = closing
			l.unlock()
			select {
			case l.wc.frames <- in:
			case <-l.wc.ctx.Done():
				return // closed by the handler's end
			}
			if closing {
				return // the read role stays held
			}
			continue
		}
		l.busy, l.reading = true, false
		l.unlock()
		if !l.serve(in, closing) {
			return
		}
	}
}

// serve handles in and then every frame queued meanwhile; it reports
// whether the calling goroutine is to read on (no follower took over).
func (l *wsLoop) serve(in inbound, closing bool) bool {
	for {
		if !closing {
			l.watch.begin(l, l.frame.Add(1))
		}
		more := l.handle(in)
		if !closing {
			l.watch.done(l)
		}
		if !more {
			l.finish("") // a close request (unless the server's shutdown ended the loop first)
			return false
		}
		l.lock()
		switch {
		case l.gone || l.quit:
			l.unlock()
			l.finish(l.endReason())
			return false
		case l.pending > 0:
			l.pending--
			l.unlock()
			select {
			case in = <-l.wc.frames:
			case <-l.wc.ctx.Done():
				l.finish(l.endReason())
				return false
			}
			closing = isCloseRequest(in.data)
			continue
		}
		l.busy = false
		if l.reading {
			l.unlock()
			return false // the follower reads on
		}
		l.reading = true
		l.unlock()
		return true
	}
}

// startFollower is the watch's: a frame has run long, so a second
// goroutine takes over the read role unless one holds it.
func (l *wsLoop) startFollower() {
	l.lock()
	if !l.busy || l.reading || l.held || l.gone || l.over {
		l.unlock()
		return
	}
	l.reading = true
	l.unlock()
	l.run()
}

// stop is the server's shutdown: the connection closes now when idle, else
// once its running frame is answered.
func (l *wsLoop) stop() {
	l.lock()
	if l.over {
		l.unlock()
		return
	}
	if l.busy {
		l.quit = true
		l.unlock()
		return
	}
	l.unlock()
	l.finish("server shutting down")
}

// endReason is why a connection whose handler saw it end is over.
func (l *wsLoop) endReason() string {
	l.lock()
	quit := l.quit
	l.unlock()
	if quit && !l.wc.peerGone() {
		return "server shutting down"
	}
	return l.wc.goneReason()
}

// finish runs end once.
func (l *wsLoop) finish(why string) {
	l.lock()
	if l.over {
		l.unlock()
		return
	}
	l.over = true
	l.unlock()
	l.ended(why)
}

// ended runs end, the loop being over.
func (l *wsLoop) ended(why string) {
	l.lock()
	unwatch := l.unwatch
	l.unlock()
	if unwatch != nil {
		unwatch()
	}
	l.end(why)
}

// watchQuit closes the connection when ctx ends (the server's shutdown: stop).
func (l *wsLoop) watchQuit(ctx context.Context) {
	l.lock()
	defer l.unlock()
	l.unwatch = context.AfterFunc(ctx, l.stop)
}
