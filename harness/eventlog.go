package harness

import (
	"sync"

	"github.com/harnessd/harnessd/wire"
)

// eventLog collects an episode's events from the adapter and the bridge,
// which report from different goroutines, into one ordered trajectory, the
// running turn's events, and the optional live stream of that turn.
type eventLog struct {
	mu      sync.Mutex
	traj    []wire.Event
	rec     *recorder
	turn    int          // the running turn, 0 between turns
	events  []wire.Event // the running turn's events
	emit    func(wire.Event)
	pending []wire.Event // arrived between turns; they open the next turn
	lastTS  float64
}

// add records e: stamped with the turn, kept in time order, streamed.
func (l *eventLog) add(e wire.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Timestamp == 0 {
		e.Timestamp = wire.Now()
	}
	if e.Timestamp < l.lastTS {
		e.Timestamp = l.lastTS
	}
	l.lastTS = e.Timestamp
	if l.turn == 0 {
		l.pending = append(l.pending, e)
		return
	}
	e.Turn = l.turn
	l.keep(e)
}

func (l *eventLog) keep(e wire.Event) {
	l.traj = append(l.traj, e)
	l.rec.write(e)
	l.events = append(l.events, e)
	if l.emit != nil {
		l.emit(e)
	}
}

// beginTurn starts collecting turn n; events that arrived between turns open it.
func (l *eventLog) beginTurn(n int, emit func(wire.Event)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turn, l.emit, l.events = n, emit, nil
	for _, e := range l.pending {
		e.Turn = n
		l.keep(e)
	}
	l.pending = nil
}

// endTurn stops collecting and returns the turn's events.
func (l *eventLog) endTurn() []wire.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.events
	l.turn, l.emit, l.events = 0, nil, nil
	l.rec.flush()
	return evs
}

// trajectory returns a copy of every event of the episode.
func (l *eventLog) trajectory() []wire.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]wire.Event(nil), l.traj...)
}

// reset starts a new episode's log, writing to rec.
func (l *eventLog) reset(rec *recorder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.close()
	l.traj, l.rec, l.turn, l.events, l.emit, l.pending, l.lastTS = nil, rec, 0, nil, nil, nil, 0
}

// closeRecord flushes and closes the episode's record file.
func (l *eventLog) closeRecord() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.close()
	l.rec = nil
}

// note writes a record that is not an event (reset, message, observation)
// to the record file, in order with the events, and flushes it.
func (l *eventLog) note(r wire.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.note(r)
	l.rec.flush()
}
