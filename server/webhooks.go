package server

import (
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// The console's server-side observer: the server's own reset and step paths
// (observe.go) and the session lifecycle (sessions.go) call these, which
// record what the console shows (webLog) and publish it to the live feed
// without ever blocking.

// webMsg is one message of the console's live feed.
type webMsg struct {
	// Type is "sessions" (the list, first on every feed), "session"
	// (Session changed), "session_closed", "record" (Record of session
	// SessionID's episode) or "dropped" (Dropped messages were lost: the
	// viewer should fetch what it shows again).
	Type      string        `json:"type"`
	SessionID string        `json:"session_id,omitempty"`
	Sessions  []*webSession `json:"sessions,omitempty"`
	Session   *webSession   `json:"session,omitempty"`
	Record    *wire.Record  `json:"record,omitempty"`
	Dropped   int64         `json:"dropped,omitempty"`
}

// webSession is one session as the console lists it.
type webSession struct {
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
}

// webSummary describes m for the console.
func (s *Server) webSummary(m *managed) *webSession {
	st := m.sess.State()
	ws := &webSession{
		ID: m.id, Kind: m.kind, Turns: st.StepCount, Isolation: s.isolation(),
		Created: float64(m.created.UnixNano()) / 1e9, TurnRunning: st.TurnRunning,
	}
	if st.EpisodeID != nil {
		ws.EpisodeID = *st.EpisodeID
	}
	ws.LastReward, ws.ErrorType = m.web.summary()
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
func (s *Server) webChanged(m *managed) {
	if s.feed.active() {
		s.feed.publish(webMsg{Type: "session", SessionID: m.id, Session: s.webSummary(m)})
	}
}

// webClosed publishes the end of m.
func (s *Server) webClosed(m *managed) {
	s.feed.publish(webMsg{Type: "session_closed", SessionID: m.id})
}

// webRecord publishes one record of m's episode.
func (s *Server) webRecord(m *managed, r wire.Record) {
	s.feed.publish(webMsg{Type: "record", SessionID: m.id, Record: &r})
}

// webObserve records and publishes what the console shows of m's
// session lifecycle.
func (s *Server) webObserve(m *managed, ev session.Event) {
	switch e := ev.(type) {
	case session.EpisodeOpened:
		s.webReset(m, e.Observation)
	case session.TurnStarted:
		content := e.Action.Message
		msg := wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: e.Turn, Content: &content}
		m.web.starting(msg)
		if s.feed.active() {
			s.webRecord(m, msg)
			s.webChanged(m)
		}
	case session.TurnEvent:
		if s.feed.active() {
			ev := e.Event
			s.webRecord(m, wire.Record{Kind: wire.RecordEvent, Time: ev.Timestamp, Event: &ev})
		}
	case session.TurnEnded:
		rec := m.web.stepped(e.Observation)
		if s.feed.active() {
			s.webRecord(m, rec)
			s.webChanged(m)
		}
	case session.EpisodeEnded:
		s.webChanged(m)
	}
}

// webReset records and publishes a reset's observation.
func (s *Server) webReset(m *managed, obs *wire.Observation) {
	reset := s.resetRecord(m, obs)
	rec := m.web.began(reset, obs)
	if s.feed.active() {
		s.webRecord(m, reset)
		s.webRecord(m, rec)
		s.webChanged(m)
	}
}
