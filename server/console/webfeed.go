package console

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// viewerBuffer is how many live messages one console viewer may have
// waiting, and viewerBytes how many bytes of them (a message larger than
// that alone is sent when nothing else waits); past either the viewer's
// messages are dropped (and counted, and the viewer told) rather than
// anyone waiting for it. A message carries what a harness reported (an
// observation's response, up to the console's window, or an event), so
// the count alone would let a slow viewer hold 256 of the largest.
const (
	viewerBuffer = 256
	viewerBytes  = 16 << 20
)

// webFeed fans the daemon's live messages (sessions, turns, events,
// observations) out to the console's viewers. Publishing never blocks: it
// runs on a session's event path, so a viewer that does not keep up loses
// messages instead of slowing the session.
type webFeed struct {
	mu      sync.Mutex
	viewers map[*viewer]struct{}
	count   atomic.Int32 // len(viewers), read without the lock
}

// viewer is one console's subscription.
type viewer struct {
	ch      chan []byte
	queued  atomic.Int64 // the bytes of the messages in ch
	dropped atomic.Int64 // messages lost since the viewer was last told
}

// received accounts for b, taken from the viewer's channel.
func (v *viewer) received(b []byte) { v.queued.Add(-int64(len(b))) }

// subscribe adds a viewer; the returned function removes it.
func (f *webFeed) subscribe() (*viewer, func()) {
	v := &viewer{ch: make(chan []byte, viewerBuffer)}
	f.mu.Lock()
	if f.viewers == nil {
		f.viewers = map[*viewer]struct{}{}
	}
	f.viewers[v] = struct{}{}
	f.count.Store(int32(len(f.viewers)))
	f.mu.Unlock()
	return v, func() {
		f.mu.Lock()
		delete(f.viewers, v)
		f.count.Store(int32(len(f.viewers)))
		f.mu.Unlock()
	}
}

// active reports whether anyone watches (publishers skip building
// messages otherwise).
func (f *webFeed) active() bool { return f.count.Load() > 0 }

// publish sends msg (encoded once) to every viewer whose buffer has room.
func (f *webFeed) publish(msg any) {
	if !f.active() {
		return
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return // every message type is plain data; nothing to report to
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int64(len(b))
	for v := range f.viewers {
		// Only publish adds to queued (under f.mu): what the viewer takes
		// meanwhile only makes room.
		if q := v.queued.Load(); q > 0 && q+n > viewerBytes {
			v.dropped.Add(1)
			continue
		}
		select {
		case v.ch <- b:
			v.queued.Add(n)
		default:
			v.dropped.Add(1)
		}
	}
}
