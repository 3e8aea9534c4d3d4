// Package harness is the environment of RFC 005: a Session owns one
// trainer's episode — its harness process tree (through an Adapter), its tool
// bridge, its private workspace and HOME, its rubrics and its trajectory —
// and turns Reset/Step/State/Close into harness start-up, conversational
// turns, and observations.
//
// The package defines the wire types (Event, Observation, State), the
// Adapter contract that protocol adapters in subpackages implement (on the
// base of package adapterkit), the Registry a program fills with the
// adapters it links (no adapter registers itself), and the strict YAML
// configuration of an environment. Failures of the harness never
// surface as errors from Step: a crash, a hang, a protocol violation or an
// output flood kills the tree and yields an observation with done set and
// metadata.error_type naming what happened. Errors from Step are reserved
// for misuse (no episode, episode over, a concurrent step): those are the
// Err* sentinels, while the kinds of failure are wire.Failure* values.
//
// A turn's parts live in files of their own: step.go (the order of a step),
// budget.go (the turn's deadline), turn.go (running the adapter's turn,
// classifying its error, Interrupt), observe.go (scoring, observations,
// ending an episode), record.go (the episode's record file).
//
// An episode's containment: in sandbox isolation (isolation.go,
// sandboxing.go) each episode has a sandbox of package process/sandbox
// whose doors carry its bridge, model gateway and egress proxy (egress.go);
// the next episode's sandbox is prepared in the background (spare.go), or
// with warm: N whole episodes with their harnesses (standby.go), and a
// previous episode is retired and torn down in the background when it
// cannot reach anything of the next. Tasksets are task.go's.
//
// What a turn keeps in memory is bounded (episode.max_turn_events and
// max_turn_event_bytes, turnbounds.go): past a bound the turn goes on, its
// later events are dropped and the observation says so in
// metadata.truncated; adjacent text_output events are kept as one.
// Client-chosen strings are checked by CheckText and CheckEpisodeID.
//
// The package must not know about HTTP, WebSocket or trainers' connections
// (that is package server), nor about any particular harness protocol (that
// is the adapters').
package harness
