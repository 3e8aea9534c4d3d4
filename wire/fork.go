package wire

// The fork extension (docs/protocol.md, "Forking a live episode"): a live
// episode, between turns, forks into siblings, each a session of its own
// continuing from the parent's state. OpenEnv's clients never send it.

// FrameFork is the /ws frame of a fork: the client sends
// {"type":"fork","data":ForkRequest} and is answered
// {"type":"fork","data":ForkReply} or an error frame.
const FrameFork = "fork"

// MaxForkCount is the most siblings one fork makes.
const MaxForkCount = 64

// The mechanisms a sibling's harness state is carried over by (ForkRequest
// Mechanism, ForkSibling Mechanism).
const (
	ForkMechanismResume = "resume" // the agent's own resume, against a copy of its session files
	ForkMechanismLine   = "line"   // the line protocol's fork and restore messages
	ForkMechanismReplay = "replay" // the parent's turns driven again, answered from their recorded calls
)

// ForkMechanisms lists every mechanism a request may name.
var ForkMechanisms = []string{ForkMechanismResume, ForkMechanismLine, ForkMechanismReplay}

// ForkRequest is a fork's request: the /ws frame's data, and (with
// SessionID) the body of HTTP POST /fork.
type ForkRequest struct {
	// SessionID names the parent session (HTTP only: a frame forks its
	// connection's session).
	SessionID string `json:"session_id,omitempty"`
	// Count is how many siblings to make, 1 to MaxForkCount.
	Count int `json:"count"`
	// AtTurn is the turn to fork after: 0 (or absent) the current one, an
	// earlier k from the episode's checkpoints (or a replay of turns 1..k).
	AtTurn int `json:"at_turn,omitempty"`
	// Mechanism is one of ForkMechanisms, or "" for the best the harness
	// allows (resume, else line, else replay).
	Mechanism string `json:"mechanism,omitempty"`
}

// ForkReply is a fork's answer: the parent and one entry per sibling, in
// order. A sibling that failed has Error set and no session.
type ForkReply struct {
	// ParentSessionID is the forked session's id.
	ParentSessionID string `json:"parent_session_id"`
	// ParentEpisodeID is the forked episode's id.
	ParentEpisodeID string `json:"parent_episode_id,omitempty"`
	// AtTurn is the turn the siblings continue after (their next step is
	// turn AtTurn+1).
	AtTurn int `json:"at_turn"`
	// Siblings are the new sessions, Count of them.
	Siblings []ForkSibling `json:"siblings"`
}

// ForkSibling is one sibling of a fork.
type ForkSibling struct {
	// SessionID is the sibling's session: attach to it with a /ws
	// connection's ?session_id=, or name it in an HTTP route's session_id.
	// Empty when the sibling failed.
	SessionID string `json:"session_id,omitempty"`
	// EpisodeID is the sibling's episode.
	EpisodeID string `json:"episode_id,omitempty"`
	// Mechanism is how the sibling's harness state was carried over.
	Mechanism string `json:"mechanism,omitempty"`
	// Error says why the sibling failed (nothing else is set then but,
	// where known, Mechanism and Observation).
	Error string `json:"error,omitempty"`
	// Observation is the sibling's first observation, as a reset's: its
	// metadata.fork says where it came from; a failed sibling's is the
	// terminal observation of its start (error_type, stderr tail).
	Observation *Observation `json:"observation,omitempty"`
}
