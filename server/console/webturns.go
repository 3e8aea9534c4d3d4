package console

import (
	"sync"

	"sort"

	"github.com/harnessd/harnessd/wire"
)

// maxWebTurns bounds the turns (message and observation records) the
// console keeps of a live session's episode; older turns are dropped. The
// session keeps as many turns of events (session.Session.TrajectoryWindow),
// so the two windows line up; the episode view names what they left out.
const maxWebTurns = 1000

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
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reset = &reset
	l.turns.restart(entryOf(nil, rec))
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
	l.turns.add(entryOf(msg, rec))
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
// events and its observation.
func (l *webLog) records(traj []wire.Event) []wire.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]wire.Record, 0, 2*l.turns.len()+len(traj)+1)
	if l.reset != nil {
		out = append(out, *l.reset)
	}
	byTurn := map[int][]wire.Event{}
	for _, e := range traj {
		byTurn[e.Turn] = append(byTurn[e.Turn], e)
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
	return out
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

// windowTurns is the most entries a window holds: maxWebTurns turns (the
// reset's observation, the first entry, is the first dropped).
const windowTurns = maxWebTurns

// turnEntry is what a turn's message and observation records are made
// of, 56 bytes instead of the two records' 400 (the records are built
// when read): the
// observation's turn and time, the slim observation, and the message's
// time, turn and text when the turn had one. The reset's observation is an
// entry of turn 0 without a message.
type turnEntry struct {
	turn    int
	obsTime float64
	obs     *wire.Observation
	hasMsg  bool // the turn had a message record
	msgTime float64
	msgTurn int
	msg     *string
}

// entryOf makes the entry of an observation record and, when msg is not
// nil, the message record before it.
func entryOf(msg *wire.Record, obs wire.Record) turnEntry {
	t := turnEntry{turn: obs.Turn, obsTime: obs.Time, obs: obs.Observation}
	if msg != nil {
		t.hasMsg, t.msgTime, t.msg, t.msgTurn = true, msg.Time, msg.Content, msg.Turn
	}
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

// window holds the latest windowTurns entries of an episode, in order: a
// slice that grows to that bound and then is a ring (its oldest entry at
// start), so that a long episode's turns allocate nothing more in it; the
// next episode reuses it. Its readers copy the records out.
type window struct {
	turns []turnEntry
	start int // the oldest entry's index, once full
}

// restart empties the window (keeping its memory, its old entries
// cleared) and adds first.
func (w *window) restart(first turnEntry) {
	clear(w.turns)
	w.turns, w.start = append(w.turns[:0], first), 0
}

// add appends t, dropping the oldest entry when the window is full.
func (w *window) add(t turnEntry) {
	if len(w.turns) < windowTurns {
		w.turns = append(w.turns, t)
		return
	}
	w.turns[w.start] = t
	w.start = (w.start + 1) % windowTurns
}

// len is how many entries the window holds.
func (w *window) len() int { return len(w.turns) }

// each calls f with the entries in order, oldest first.
func (w *window) each(f func(*turnEntry)) {
	for i := range w.turns {
		f(&w.turns[(w.start+i)%len(w.turns)])
	}
}
