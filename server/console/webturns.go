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
	turns      window // message and observation records
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
	l.turns.restart(rec)
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
	if l.hasMsg {
		l.turns.add(l.msg)
		l.msg, l.hasMsg = wire.Record{}, false
	}
	l.turns.add(rec)
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
	out := make([]wire.Record, 0, len(l.turns.recs)+len(traj)+1)
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
	for _, part := range l.turns.parts() {
		for _, r := range part {
			if r.Kind == wire.RecordObservation && r.Turn > 0 {
				events(r.Turn)
			}
			out = append(out, r)
		}
	}
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

// windowRecords is the most records a window holds: maxWebTurns turns of
// a message and an observation each.
const windowRecords = 2 * maxWebTurns

// window holds the latest windowRecords records of an episode, in order:
// a slice that grows to that bound and then is a ring (its oldest record
// at start), so that a long episode's turns allocate nothing more in it;
// the next episode reuses it. Its readers copy the records out.
type window struct {
	recs  []wire.Record
	start int // the oldest record's index, once full
}

// restart empties the window (keeping its memory, its old records
// cleared) and adds first.
func (w *window) restart(first wire.Record) {
	clear(w.recs)
	w.recs, w.start = append(w.recs[:0], first), 0
}

// add appends r, dropping the oldest record when the window is full.
func (w *window) add(r wire.Record) {
	if len(w.recs) < windowRecords {
		w.recs = append(w.recs, r)
		return
	}
	w.recs[w.start] = r
	w.start = (w.start + 1) % windowRecords
}

// parts are the records in order, oldest first, in two runs.
func (w *window) parts() [2][]wire.Record {
	return [2][]wire.Record{w.recs[w.start:], w.recs[:w.start]}
}
