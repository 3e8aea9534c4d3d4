package session

import (
	"time"

	"github.com/harnessd/harnessd/wire"
)

// Observer is told of a session's lifecycle as it happens: metrics and
// the web console subscribe to it instead of being called from the
// session's core path. It is called from the session's goroutines, in
// order for one session, and must not block.
type Observer func(Event)

// Event is one lifecycle event: EpisodeOpened, TurnStarted, TurnEvent,
// TurnEnded, EpisodeEnded or Forked.
type Event interface{ lifecycle() }

// EpisodeOpened: a reset started an episode (its reset observation says
// whether the harness came up; a failed start is followed by its
// EpisodeEnded).
type EpisodeOpened struct {
	SessionID, EpisodeID string
	// Standby says a prepared standby was handed over.
	Standby bool
	// Elapsed is the reset's duration.
	Elapsed time.Duration
	// Observation is the reset's observation.
	Observation *wire.Observation
}

// TurnStarted: a step began turn Turn with Action.
type TurnStarted struct {
	SessionID, EpisodeID string
	Turn                 int
	Action               wire.Action
}

// TurnEvent: an event of the running turn, as it was kept (streamed to
// the step's emit as well).
type TurnEvent struct {
	SessionID, EpisodeID string
	Event                wire.Event
}

// TurnEnded: a turn's observation.
type TurnEnded struct {
	SessionID, EpisodeID string
	Elapsed              time.Duration
	Observation          *wire.Observation
}

// EpisodeEnded: an episode is over, reported exactly once per opened
// episode: when an observation ends it (ErrorType says how, "" for a
// normal end), when a reset replaces it, or when the session closes.
type EpisodeEnded struct {
	SessionID, EpisodeID string
	ErrorType            wire.FailureType
}

// Forked: a fork of the session's episode made its siblings (each
// sibling's own session reports its EpisodeOpened to its own observer).
type Forked struct {
	SessionID, EpisodeID string
	// AtTurn is the parent's turn the siblings continue after.
	AtTurn int
	// Mechanism is how the siblings' harnesses reached the parent's state.
	Mechanism string
	// Siblings are the fork's results, failed ones included.
	Siblings []Sibling
	// Elapsed is the whole fork's duration.
	Elapsed time.Duration
}

func (EpisodeOpened) lifecycle() {}
func (Forked) lifecycle()        {}
func (TurnStarted) lifecycle()   {}
func (TurnEvent) lifecycle()     {}
func (TurnEnded) lifecycle()     {}
func (EpisodeEnded) lifecycle()  {}

// notify tells the observer of ev, if there is one.
func (s *Session) notify(ev Event) {
	if s.observer != nil {
		s.observer(ev)
	}
}

// episodeEnded reports the end of run r once: the first call of the run wins.
func (s *Session) episodeEnded(r *run, errType wire.FailureType) {
	s.mu.Lock()
	first := !r.reported
	r.reported = true
	s.mu.Unlock()
	if first {
		dropCheckpoints(r)
		s.notify(EpisodeEnded{SessionID: s.id, EpisodeID: r.id, ErrorType: errType})
	}
}
