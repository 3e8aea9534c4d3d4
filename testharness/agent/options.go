package agent

import "time"

// Options are the start-up behaviours of the fake agent, shared by every
// front end, plus the settings of individual front ends.
type Options struct {
	SlowStart     time.Duration // wait before announcing ready
	CrashOnStart  int           // exit with this code before ready (0: don't)
	NeverReady    bool          // never announce ready
	IgnoreTerm    bool          // ignore SIGTERM from the start
	StartupStderr string        // written to stderr at start
	NoisyStart    bool          // print a non-JSON banner line before ready
	MCPProtocol   string        // protocol version for MCP calls

	// Args are the positional arguments after the flags (the message of
	// the oneshot front end).
	Args []string

	// SessionDir is where the oneshot front end keeps conversation
	// histories, one file per session id.
	SessionDir string
	// Resume is the session id the oneshot front end continues.
	Resume string
	// Format is the oneshot front end's output format.
	Format string

	// NoPromptAfter makes the tui front end stop printing its prompt after
	// this many turns (0: always print it).
	NoPromptAfter int

	// StreamJSON holds the Claude/Qwen flags of the stream-json front end.
	StreamJSON StreamJSONFlags
	IgnoreEOF  bool   // acp: keep running after stdin ends
	ACPNoHTTP  bool   // acp: advertise no http MCP support
	ACPAuth    string // acp: require authenticate with this method id
}
