package console

import (
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// The console's observer: the sessions' lifecycle events (Observe) and
// the server's opening and closing of sessions (Opened, Closed) call these, which
// record what the console shows (webLog) and publish it to the live feed
// without ever blocking.

// Message is one message of the console's live feed.
type Message struct {
	// Type is "sessions" (the list, first on every feed), "session"
	// (Session changed), "session_closed", "record" (Record of session
	// SessionID's episode) or "dropped" (Dropped messages were lost: the
	// viewer should fetch what it shows again).
	Type      string            `json:"type"`
	SessionID string            `json:"session_id,omitempty"`
	Sessions  []*SessionSummary `json:"sessions,omitempty"`
	Session   *SessionSummary   `json:"session,omitempty"`
	Record    *wire.Record      `json:"record,omitempty"`
	Dropped   int64             `json:"dropped,omitempty"`
}

// SessionSummary is one session as the console lists it.
type SessionSummary struct {
	ID          string           `json:"id"`
	Kind        string           `json:"kind"`
	State       string           `json:"state"`
	EpisodeID   string           `json:"episode_id,omitempty"`
	Turns       int              `json:"turns"`
	LastReward  *float64         `json:"last_reward"`
	ErrorType   wire.FailureType `json:"error_type,omitempty"`
	Isolation   string           `json:"isolation"`
	Created     float64          `json:"created"`
	TurnRunning bool             `json:"turn_running"`
	// ForkedFrom says which session's episode, at which turn, this
	// session was forked from.
	ForkedFrom *wire.ForkOrigin `json:"forked_from,omitempty"`
}

// webSummary describes m for the console.
func (c *Console) webSummary(m Session) *SessionSummary {
	st := m.Session.State()
	ws := &SessionSummary{
		ID: m.ID, Kind: m.Kind, Turns: st.StepCount, Isolation: c.o.Isolation,
		Created: float64(m.Created.UnixNano()) / 1e9, TurnRunning: st.TurnRunning,
	}
	if st.EpisodeID != nil {
		ws.EpisodeID = *st.EpisodeID
	}
	ws.ForkedFrom = m.ForkedFrom
	ws.LastReward, ws.ErrorType = c.log(m.ID).summary()
	if ws.ErrorType == "" && st.LastError != nil {
		ws.ErrorType = st.LastError.Type
	}
	switch {
	case st.TurnRunning:
		ws.State = "running"
	case st.Active:
		ws.State = "active"
	case st.EpisodeID != nil:
		ws.State = "done"
	default:
		ws.State = "new"
	}
	return ws
}

// webChanged publishes m's summary.
func (c *Console) webChanged(m Session) {
	// A fork's sibling reports its episode's start before the server has
	// registered its session: what is published of it waits for that.
	if c.feed.active() && m.Session != nil {
		c.feed.publish(Message{Type: "session", SessionID: m.ID, Session: c.webSummary(m)})
	}
}

// webRecord publishes one record of m's episode.
func (c *Console) webRecord(m Session, r wire.Record) {
	c.feed.publish(Message{Type: "record", SessionID: m.ID, Record: &r})
}

// webObserve records and publishes what the console shows of m's
// session lifecycle.
func (c *Console) webObserve(m Session, ev session.Event) {
	switch e := ev.(type) {
	case session.EpisodeOpened:
		c.webReset(m, e.Observation)
	case session.TurnStarted:
		content := e.Action.Message
		msg := wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: e.Turn, Content: &content}
		c.log(m.ID).starting(msg)
		if c.feed.active() {
			c.webRecord(m, msg)
			c.webChanged(m)
		}
	case session.TurnEvent:
		if c.feed.active() {
			ev := e.Event
			c.webRecord(m, wire.Record{Kind: wire.RecordEvent, Time: ev.Timestamp, Event: &ev})
		}
	case session.TurnEnded:
		rec := c.log(m.ID).stepped(e.Observation)
		if c.feed.active() {
			c.webRecord(m, rec)
			if m.Session == nil {
				break // a fork's sibling not registered yet (webChanged)
			}
			// The session still holds its turn while it reports the end:
			// what the viewer sees next is the session between turns.
			s := c.webSummary(m)
			if s.TurnRunning {
				s.TurnRunning, s.State = false, "active"
				if e.Observation.Done {
					s.State = "done"
				}
			}
			c.feed.publish(Message{Type: "session", SessionID: m.ID, Session: s})
		}
	case session.EpisodeEnded:
		c.webChanged(m)
	}
}

// webReset records and publishes a reset's observation.
func (c *Console) webReset(m Session, obs *wire.Observation) {
	reset := c.resetRecord(m, obs)
	rec := c.log(m.ID).began(reset, obs)
	if c.feed.active() {
		c.webRecord(m, reset)
		c.webRecord(m, rec)
		c.webChanged(m)
	}
}
