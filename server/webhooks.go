package server

import (
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

// webTurnStarting publishes the message of a turn about to run and returns
// the emit function that also publishes the turn's events as they happen.
func (s *Server) webTurnStarting(m *managed, a wire.Action, emit func(wire.Event)) func(wire.Event) {
	if s.feed.active() && !m.sess.Busy() {
		n := m.sess.State().StepCount + 1
		content := a.Message
		s.webRecord(m, wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: n, Content: &content})
		s.webChanged(m)
	}
	return func(e wire.Event) {
		if emit != nil {
			emit(e)
		}
		if s.feed.active() {
			s.webRecord(m, wire.Record{Kind: wire.RecordEvent, Time: e.Timestamp, Event: &e})
		}
	}
}

// webStepped records and publishes a turn's message and observation.
func (s *Server) webStepped(m *managed, a wire.Action, obs *wire.Observation) {
	content := a.Message
	msg := wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: obs.Metadata.TurnNumber, Content: &content}
	rec := m.web.stepped(msg, obs)
	if s.feed.active() {
		s.webRecord(m, rec)
		s.webChanged(m)
	}
}
