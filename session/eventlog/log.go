package eventlog

import (
	"sync"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/wire"
)

// Log collects an episode's events from the adapter and the bridge,
// which report from different goroutines, into one ordered trajectory, the
// running turn's events, and the optional live stream of that turn.
//
// The trajectory is not kept whole: every event goes to the record file
// (when the daemon has a record_dir) as it is kept, and memory holds only a
// window of the latest turns (at most WindowTurns ended turns and
// WindowBytes of their events, always the last ended turn, plus the running
// turn), so a long episode costs the daemon the same at turn 60,000 as at
// turn 1,000. What fell out of the window is counted (omitted).
//
// What a turn keeps is bounded (turnCaps): once a bound is hit the turn
// keeps no more of the harness's events, only its end and the daemon's own,
// and its observation carries the truncation marker. Adjacent text_output
// events of one origin are kept as one (textRun); the live stream still
// gets each event as it happened.
//
// The record follows the running turn: what is kept is written to the
// record's buffer, and a flusher (a timer armed by the first unwritten
// record, stopped with the record) writes it to the file within
// recordFlushBound, with the text of a run still open (a run the flusher
// finds open is written in pieces, split at line boundaries, which joined
// by newlines are the run's event).
type Log struct {
	mu      sync.Mutex
	limits  turnLimits
	traj    []wire.Event // the window: the retained turns' events, in order
	spans   []turnSpan   // the ended turns in traj, oldest first
	winSize int64        // the bytes of the ended turns in traj
	omitted Omitted      // what fell out of the window
	rec     *Recorder
	flusher *time.Timer  // writes rec's buffer and the open run's text; nil until first armed
	armed   bool         // the flusher is due
	turn    int          // the running turn, 0 between turns
	events  []wire.Event // the running turn's events
	emit    func(wire.Event)
	pending pendingEvents // arrived between turns; they open the next turn
	lastTS  float64
	run     textRun
	budget  turnCaps
	cut     *wire.Truncation // the last ended turn's truncation
	tap     func(wire.Event) // sees every event added (SetTap)
}

// Omitted is what of an episode's trajectory a Log no longer keeps in
// memory: its oldest turns, beyond the window of the latest ones.
type Omitted struct {
	// Turns and Events count the turns left out and their events.
	Turns, Events int
	// LastTurn is the latest turn left out (0 when none is): the window
	// starts after it.
	LastTurn int
	// RecordFile names the episode's record file in the record directory,
	// which has every turn; empty when the daemon keeps no records.
	RecordFile string
}

// The window of past turns a Log keeps in memory (the record file
// keeps every turn): at most WindowTurns ended turns and WindowBytes of
// their events, the last ended turn always kept. The web console keeps its
// own records of a live episode's turns within the same bounds
// (server/console's window).
const (
	// WindowTurns is the most ended turns the window keeps.
	WindowTurns = 1000
	// WindowBytes is the most bytes of ended turns' events the window
	// keeps (as the turn's caps count them: their JSON encoding).
	WindowBytes = 16 << 20
)

// turnSpan is one ended turn of the window: how many of traj's events are
// its, and their size as the turn's caps counted it.
type turnSpan struct {
	turn   int
	events int
	bytes  int64
}

// SetLimits sets the per-turn bounds from an episode configuration (zero
// fields take the defaults).
func (l *Log) SetLimits(e config.EpisodeConfig) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = limitsOf(e)
}

// Add records e: stamped with the turn, kept in time order within the
// turn's bounds, streamed; then the tap, if set, sees it (outside the
// log's lock, on the reporter's goroutine).
func (l *Log) Add(e wire.Event) {
	l.mu.Lock()
	tap := l.tap
	l.record(e)
	l.mu.Unlock()
	if tap != nil {
		tap(e)
	}
}

// SetTap sets (nil: clears) the function that sees every event added: the
// event queue's trigger on tool calls during a turn.
func (l *Log) SetTap(f func(wire.Event)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tap = f
}

// record is add under the log's lock.
func (l *Log) record(e wire.Event) {
	if e.Timestamp == 0 {
		e.Timestamp = wire.Now()
	}
	if e.Timestamp < l.lastTS {
		e.Timestamp = l.lastTS
	}
	l.lastTS = e.Timestamp
	if l.turn == 0 {
		l.pending.add(e, l.limits)
		return
	}
	e.Turn = l.turn
	l.take(e)
}

// take admits one event of the running turn.
func (l *Log) take(e wire.Event) {
	joins := l.run.joins(e)
	var size int64
	if joins {
		size = joinedSize(e)
	} else {
		e, size = shaped(e)
	}
	if reason, ok := l.budget.admit(size, !joins, exempt(e)); !ok {
		if coalescable(e) {
			// Counted as the line of a run it would have joined, not as an
			// event of its own.
			size = joinedSize(e)
		}
		if first := l.budget.drop(size, reason); first {
			l.closeRun()
			l.takeNotice(reason)
		}
		return
	}
	if l.emit != nil {
		l.emit(e)
	}
	if joins {
		l.run.join(e)
		l.arm()
		return
	}
	l.closeRun()
	if coalescable(e) {
		l.run.start(e)
		l.arm()
		return
	}
	l.store(e)
}

// takeNotice keeps and streams the daemon's note that the turn's events are
// cut short from here on.
func (l *Log) takeNotice(reason string) {
	n := wire.ErrorEvent(wire.OriginDaemon, truncationNotice(reason, l.limits), true)
	n.Timestamp, n.Turn = l.lastTS, l.turn
	l.budget.use(eventSize(n), true)
	if l.emit != nil {
		l.emit(n)
	}
	l.store(n)
}

// store keeps e in the trajectory, the record and the turn's events.
func (l *Log) store(e wire.Event) {
	l.rec.write(e)
	l.arm()
	l.keep(e)
}

// keep keeps e in the trajectory and the turn's events.
func (l *Log) keep(e wire.Event) {
	l.traj = append(l.traj, e)
	l.events = append(l.events, e)
}

// closeRun stores the open run of text, if any. A run the flusher wrote
// pieces of has its last piece recorded, and is kept whole.
func (l *Log) closeRun() {
	if !l.run.open {
		return
	}
	pieces := l.run.recorded
	if pieces {
		l.recordRun()
	}
	e, _ := l.run.close()
	if pieces {
		l.keep(e)
	} else {
		l.store(e)
	}
}

// recordRun writes the open run's text that is not in the record yet as
// an event (a piece of the run).
func (l *Log) recordRun() {
	if l.rec == nil {
		return
	}
	if e, ok := l.run.piece(); ok {
		l.rec.write(e)
		l.arm()
	}
}

// arm makes the flusher due, if there is a record and it is not due yet.
func (l *Log) arm() {
	if l.rec == nil || l.armed {
		return
	}
	l.armed = true
	if l.flusher == nil {
		l.flusher = time.AfterFunc(recordFlushBound, l.flushDue)
		return
	}
	l.flusher.Reset(recordFlushBound)
}

// flushDue is the flusher: it writes the open run's text and the record's
// buffer to the file.
func (l *Log) flushDue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.armed { // stopped, or flushed by a turn's end or a note
		return
	}
	l.recordRun()
	l.rec.flush()
	l.armed = false
}

// flushed says the record's buffer was written: the flusher is not due.
func (l *Log) flushed() {
	l.armed = false
	if l.flusher != nil {
		l.flusher.Stop()
	}
}

// BeginTurn starts collecting turn n; events that arrived between turns open it.
func (l *Log) BeginTurn(n int, emit func(wire.Event)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.turn != 0 { // the previous turn never ended: its events stay a turn of the window
		l.closeRun()
		l.endSpan()
	}
	l.turn, l.emit, l.events, l.cut = n, emit, l.turnEvents(), nil
	l.budget = turnCaps{limits: l.limits}
	evs, dropped := l.pending.take()
	for _, e := range evs {
		e.Turn = n
		l.take(e)
	}
	if dropped != nil {
		if first := l.budget.merge(dropped); first {
			l.closeRun()
			l.takeNotice(dropped.Reason)
		}
	}
}

// maxEventsHint bounds the room a turn's events are given at its start.
const maxEventsHint = 64

// turnEvents is a new turn's event list, with room for as many events as
// the last ended turn had (at most maxEventsHint): one allocation, not one
// per doubling (a turn's list is handed to its observation, so it cannot
// be reused).
func (l *Log) turnEvents() []wire.Event {
	n := 2
	if len(l.spans) > 0 {
		n = min(max(n, l.spans[len(l.spans)-1].events), maxEventsHint)
	}
	return make([]wire.Event, 0, n)
}

// EndTurn stops collecting and returns the turn's events; Truncation then
// reports what the turn dropped.
func (l *Log) EndTurn() []wire.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeRun()
	evs := l.events
	l.cut = l.budget.cut
	l.endSpan()
	l.turn, l.emit, l.events, l.budget = 0, nil, nil, turnCaps{}
	l.rec.flush()
	l.flushed()
	return evs
}

// endSpan counts the running turn's events as an ended turn of the window
// and trims the window.
func (l *Log) endSpan() {
	if l.turn == 0 {
		return
	}
	l.spans = append(l.spans, turnSpan{turn: l.turn, events: len(l.events), bytes: l.budget.bytes})
	l.winSize += l.budget.bytes
	l.trim()
}

// trim drops the oldest ended turns from the window while it holds more
// than WindowTurns turns or WindowBytes, keeping the last ended turn. The
// dropped events are cleared so that what they point to can be freed; the
// array itself is reallocated at the window's size by a later append.
func (l *Log) trim() {
	drop, events := 0, 0
	for len(l.spans)-drop > 1 && (len(l.spans)-drop > WindowTurns || l.winSize > WindowBytes) {
		sp := l.spans[drop]
		drop++
		events += sp.events
		l.winSize -= sp.bytes
		l.omitted.Turns++
		l.omitted.Events += sp.events
		l.omitted.LastTurn = sp.turn
	}
	if drop == 0 {
		return
	}
	clear(l.traj[:events])
	l.traj = l.traj[events:]
	clear(l.spans[:drop])
	l.spans = l.spans[drop:]
}

// Truncation returns the marker of the last ended turn: nil when it kept
// every event.
func (l *Log) Truncation() *wire.Truncation {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut == nil {
		return nil
	}
	c := *l.cut
	return &c
}

// Trajectory returns a copy of the window's events (the latest turns of
// the episode, the running one included) and what of the episode is no
// longer in it.
func (l *Log) Trajectory() ([]wire.Event, Omitted) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.omitted
	if l.rec != nil {
		o.RecordFile = l.rec.name
	}
	return append([]wire.Event(nil), l.traj...), o
}

// Reset starts a new episode's log, writing to rec.
func (l *Log) Reset(rec *Recorder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.close()
	l.flushed()
	l.traj, l.rec, l.turn, l.events, l.emit, l.lastTS = nil, rec, 0, nil, nil, 0
	l.spans, l.winSize, l.omitted = nil, 0, Omitted{}
	l.pending, l.run, l.budget, l.cut = pendingEvents{}, textRun{}, turnCaps{}, nil
}

// CloseRecord flushes and closes the episode's record file.
func (l *Log) CloseRecord() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.close()
	l.flushed()
	l.rec = nil
}

// Recording reports whether the log writes a record file: without one,
// Note does nothing, and a caller need not build its record.
func (l *Log) Recording() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec != nil
}

// Note writes a record that is not an event (reset, message, observation)
// to the record file, in order with the events, and flushes it (an open
// run's text first).
func (l *Log) Note(r wire.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recordRun()
	l.rec.note(r)
	l.rec.flush()
	l.flushed()
}
