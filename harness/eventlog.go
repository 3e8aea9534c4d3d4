package harness

import "sync"

// eventLog collects an episode's events from the adapter and the bridge,
// which report from different goroutines, into one ordered trajectory, the
// running turn's events, and the optional live stream of that turn.
type eventLog struct {
	mu      sync.Mutex
	traj    []Event
	rec     *recorder
	turn    int     // the running turn, 0 between turns
	events  []Event // the running turn's events
	emit    func(Event)
	pending []Event // arrived between turns; they open the next turn
	lastTS  float64
}

// add records e: stamped with the turn, kept in time order, streamed.
func (l *eventLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Timestamp == 0 {
		e.Timestamp = Now()
	}
	if e.Timestamp < l.lastTS {
		e.Timestamp = l.lastTS
	}
	l.lastTS = e.Timestamp
	if e.Data == nil {
		e.Data = map[string]any{}
	}
	if l.turn == 0 {
		l.pending = append(l.pending, e)
		return
	}
	e.Turn = l.turn
	l.keep(e)
}

func (l *eventLog) keep(e Event) {
	l.traj = append(l.traj, e)
	l.rec.write(e)
	l.events = append(l.events, e)
	if l.emit != nil {
		l.emit(e)
	}
}

// beginTurn starts collecting turn n; events that arrived between turns open it.
func (l *eventLog) beginTurn(n int, emit func(Event)) {
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
func (l *eventLog) endTurn() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.events
	l.turn, l.emit, l.events = 0, nil, nil
	l.rec.flush()
	return evs
}

// trajectory returns a copy of every event of the episode.
func (l *eventLog) trajectory() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.traj...)
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
