package console

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// viewerBuffer is how many live messages one console viewer may have
// waiting; past it the viewer's messages are dropped (and counted, and the
// viewer told) rather than anyone waiting for it.
const viewerBuffer = 256

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
	dropped atomic.Int64 // messages lost since the viewer was last told
}

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
	for v := range f.viewers {
		select {
		case v.ch <- b:
		default:
			v.dropped.Add(1)
		}
	}
}
