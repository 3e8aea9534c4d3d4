// Package eventlog owns an episode's event log (Log): the events the
// adapter and the bridge report, from their own goroutines, put in one
// order and stamped with the running turn; what a turn keeps within its
// bounds (episode.max_turn_events, max_turn_event_bytes) and the truncation
// marker when it cuts; adjacent text joined into one event; the live
// stream of the running turn; the in-memory window of the latest turns
// (and what fell out of it, Omitted); and the episode's record file
// (Recorder), which the log follows within a bounded delay.
//
// It must not touch what a turn does with its events (observations,
// rewards, the event queue's triggers, which see the events through the
// log's tap) nor when turns begin and end: package session drives a Log
// and owns those.
package eventlog
