package session

import (
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/wire"
)

// resetRecord describes the episode s is starting.
func (s *Session) resetRecord(r *run) wire.Record {
	return wire.Record{
		Kind: wire.RecordReset, Time: wire.Now(), EpisodeID: r.id, SessionID: s.id, Config: s.cfg.Name,
		Agent: s.cfg.Harness.Agent, Adapter: s.cfg.Harness.Adapter, Isolation: s.isolationName(),
		Tools: append([]string{}, r.ep.Tools()...),
	}
}

// messageRecord records turn's message; source says who wrote it when it
// was not the trainer (wire.SourceUser, wire.SourceTask).
func messageRecord(turn int, content, source string) wire.Record {
	return wire.Record{Kind: wire.RecordMessage, Time: wire.Now(), Turn: turn, Content: &content, Source: source}
}

// noteObservation writes o to the episode's record file, if it has one;
// without one no record is built (the copy of o is most of a turn's
// allocation outside the harness's events).
func (s *Session) noteObservation(o *wire.Observation) {
	if s.events.Recording() {
		s.events.Note(observationRecord(o))
	}
}

// observationRecord records o without its turn events, which the file holds
// as event records already.
func observationRecord(o *wire.Observation) wire.Record {
	c := *o
	c.Metadata.TurnEvents = nil
	return wire.Record{Kind: wire.RecordObservation, Time: wire.Now(), Turn: o.Metadata.TurnNumber, Observation: &c}
}

// isolationName says how the episode's tree is contained and killed:
// "sandbox", or process isolation's kill mechanisms.
func (s *Session) isolationName() string {
	if s.env.Sandboxed() {
		return config.IsolationSandbox
	}
	return s.env.Supervisor.Mechanisms().KillMode()
}
