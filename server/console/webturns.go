package console

import (
	"sort"
	"sync"

	"github.com/harnessd/harnessd/session/eventlog"
	"github.com/harnessd/harnessd/wire"
)

// maxWebTurns and maxWebBytes bound the turns (message and observation
// records) the console keeps of a live session's episode: at most
// maxWebTurns turns and maxWebBytes of them (window.add), the oldest
// dropped first, the latest always kept (cut to fit when it alone is
// larger). The session's window of the turns' events has the same bounds
// (session.Session.TrajectoryWindow); the episode view names the turns
// either left out.
const (
	maxWebTurns = eventlog.WindowTurns
	maxWebBytes = eventlog.WindowBytes
)

// webLog is what the console shows of a live session's current episode
// beyond its trajectory: the reset, each turn's message and each
// observation (without turn_events, which are the trajectory's), as
// records in the shape of a record file, so a live episode and a recorded
// one are read the same way. The server writes it around the session's
// operations; it never reaches into the session.
type webLog struct {
	mu         sync.Mutex
	reset      *wire.Record
	msg        wire.Record // the running turn's message, when hasMsg
	hasMsg     bool
	turns      window // the reset's observation, then each turn's message and observation
	lastReward *float64
	errorType  wire.FailureType
}

// slim returns the observation without its turn events.
func slim(obs *wire.Observation) *wire.Observation {
	o := *obs
	o.Metadata.TurnEvents = nil
	return &o
}

// began records a reset's observation, opening a new episode.
func (l *webLog) began(reset wire.Record, obs *wire.Observation) wire.Record {
	rec := wire.Record{Kind: wire.RecordObservation, Time: wire.Now(), Observation: slim(obs)}
	t := entryOf(nil, rec)
	rec.Observation = t.obs
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reset = &reset
	l.turns.restart(t)
	l.hasMsg = false
	l.lastReward, l.errorType = obs.Reward, obs.Metadata.ErrorType
	return rec
}

// starting records the message of the turn about to run.
func (l *webLog) starting(msg wire.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msg, l.hasMsg = msg, true
}

// stepped records a turn: its message and its observation.
func (l *webLog) stepped(obs *wire.Observation) wire.Record {
	rec := wire.Record{Kind: wire.RecordObservation, Time: wire.Now(), Turn: obs.Metadata.TurnNumber, Observation: slim(obs)}
	l.mu.Lock()
	defer l.mu.Unlock()
	var msg *wire.Record
	if l.hasMsg {
		msg = &l.msg
	}
	t := entryOf(msg, rec)
	l.turns.add(t)
	rec.Observation = t.obs // what the console keeps, cut to fit
	l.msg, l.hasMsg = wire.Record{}, false
	if obs.Reward != nil {
		l.lastReward = obs.Reward
	}
	l.errorType = obs.Metadata.ErrorType
	return rec
}

// summary returns the last reward and error type.
func (l *webLog) summary() (*float64, wire.FailureType) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastReward, l.errorType
}

// records merges the log with the episode's trajectory into record-file
// order: the reset, its observation, then per turn the message, the turn's
// events and its observation. Events of turns the console's window no
// longer holds are left out with them; dropped says which those are.
func (l *webLog) records(traj []wire.Event) (recs []wire.Record, dropped windowDropped) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]wire.Record, 0, 2*l.turns.len()+len(traj)+1)
	if l.reset != nil {
		out = append(out, *l.reset)
	}
	dropped = l.turns.dropped
	byTurn := map[int][]wire.Event{}
	for _, e := range traj {
		if e.Turn > dropped.lastTurn {
			byTurn[e.Turn] = append(byTurn[e.Turn], e)
		}
	}
	events := func(n int) {
		for _, e := range byTurn[n] {
			out = append(out, wire.Record{Kind: wire.RecordEvent, Time: e.Timestamp, Event: &e})
		}
		delete(byTurn, n)
	}
	l.turns.each(func(t *turnEntry) {
		if m, ok := t.message(); ok {
			out = append(out, m)
		}
		if t.turn > 0 {
			events(t.turn)
		}
		out = append(out, t.observation())
	})
	// A running turn: its message is not logged yet, its events are.
	left := make([]int, 0, len(byTurn))
	for n := range byTurn {
		left = append(left, n)
	}
	sort.Ints(left)
	for _, n := range left {
		events(n)
	}
	return out, dropped
}

// resetRecord describes a reset for the console, as a record file does.
func (c *Console) resetRecord(m Session, obs *wire.Observation) wire.Record {
	h := c.o.Config.Harness
	return wire.Record{
		Kind: wire.RecordReset, Time: wire.Now(), EpisodeID: obs.Metadata.EpisodeID, SessionID: m.ID,
		Config: c.o.Config.Name, Agent: h.Agent, Adapter: h.Adapter, Isolation: c.o.Isolation,
		Tools: obs.Metadata.InjectedTools,
	}
}

// turnEntry is what a turn's message and observation records are made
// of, 64 bytes instead of the two records' 400 (the records are built
// when read): the observation's turn and time, the slim observation, and
// the message's time, turn and text when the turn had one, and the
// entry's size. The reset's observation is an entry of turn 0 without a
// message.
type turnEntry struct {
	turn    int
	obsTime float64
	obs     *wire.Observation
	hasMsg  bool // the turn had a message record
	msgTime float64
	msgTurn int
	msg     *string
	size    int64 // entrySize
}

// entryOf makes the entry of an observation record and, when msg is not
// nil, the message record before it, cut to fit maxWebBytes (fit).
func entryOf(msg *wire.Record, obs wire.Record) turnEntry {
	t := turnEntry{turn: obs.Turn, obsTime: obs.Time, obs: obs.Observation}
	if msg != nil {
		t.hasMsg, t.msgTime, t.msg, t.msgTurn = true, msg.Time, msg.Content, msg.Turn
	}
	t.fit(maxWebBytes)
	return t
}

// message returns the entry's message record, if it has one.
func (t *turnEntry) message() (wire.Record, bool) {
	if !t.hasMsg {
		return wire.Record{}, false
	}
	return wire.Record{Kind: wire.RecordMessage, Time: t.msgTime, Turn: t.msgTurn, Content: t.msg}, true
}

// observation returns the entry's observation record.
func (t *turnEntry) observation() wire.Record {
	return wire.Record{Kind: wire.RecordObservation, Time: t.obsTime, Turn: t.turn, Observation: t.obs}
}

// window holds the latest entries of an episode, in order, within
// maxWebTurns entries and maxWebBytes of their sizes (the oldest dropped
// first, the latest always kept): a ring that grows to what the episode
// needs, up to maxWebTurns entries, so that a long episode's turns
// allocate nothing more in it; the next episode reuses it. Its readers
// copy the records out.
type window struct {
	turns   []turnEntry   // the ring
	start   int           // the oldest entry's index
	n       int           // how many entries the ring holds
	bytes   int64         // the entries' sizes
	dropped windowDropped // what the window no longer holds
}

// windowDropped is what of an episode a window dropped: turns turns,
// the latest of them lastTurn (0 when none).
type windowDropped struct {
	turns, lastTurn int
}

// restart empties the window (keeping its memory, its old entries
// cleared) and adds first.
func (w *window) restart(first turnEntry) {
	clear(w.turns)
	w.start, w.n, w.bytes, w.dropped = 0, 0, 0, windowDropped{}
	w.add(first)
}

// add appends t, then drops the oldest entries while the window holds
// more than maxWebTurns entries or maxWebBytes, keeping t.
func (w *window) add(t turnEntry) {
	if w.n == maxWebTurns {
		w.dropOldest()
	}
	if w.n == len(w.turns) {
		w.grow()
	}
	w.turns[(w.start+w.n)%len(w.turns)] = t
	w.n++
	w.bytes += t.size
	for w.n > 1 && w.bytes > maxWebBytes {
		w.dropOldest()
	}
}

// grow makes the full ring larger (twice, at most maxWebTurns entries),
// its entries in order from index 0.
func (w *window) grow() {
	ring := make([]turnEntry, min(max(2*len(w.turns), 8), maxWebTurns))
	for i := range w.n {
		ring[i] = w.turns[(w.start+i)%len(w.turns)]
	}
	w.turns, w.start = ring, 0
}

// dropOldest drops the oldest entry, cleared so that what it points to
// can be freed, and counts it.
func (w *window) dropOldest() {
	t := &w.turns[w.start]
	if t.turn > 0 {
		w.dropped.turns++
		w.dropped.lastTurn = t.turn
	}
	w.bytes -= t.size
	*t = turnEntry{}
	w.start = (w.start + 1) % len(w.turns)
	w.n--
}

// len is how many entries the window holds.
func (w *window) len() int { return w.n }

// each calls f with the entries in order, oldest first.
func (w *window) each(f func(*turnEntry)) {
	for i := range w.n {
		f(&w.turns[(w.start+i)%len(w.turns)])
	}
}
