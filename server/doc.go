// Package server exposes harness environments over HTTP and WebSocket:
// OpenEnv's generic /ws protocol (reset, step, state, close, mcp), the same
// operations over stateful HTTP (/reset, /step, /state), the streaming
// /harness socket of production mode, OpenEnv's /mcp JSON-RPC route, and
// /health, /metadata and /schema, /metrics (package server/metrics), and in
// simulation mode the web console (GET /web, package server/console). Both
// subscribe to each session's lifecycle (session.Observer, observe.go)
// rather than being called from the reset and step paths.
//
// The server owns connections, session capacity and lifetime (slots are
// reserved before a session is built; idle HTTP sessions may be reaped),
// authentication (an optional API token, and refusal of connections whose
// peer process belongs to a harness tree), wire validation and error codes
// (every client string checked where it enters, validate.go), the bounds of
// what it reads and writes (no client frame or body held past the frame
// limit, limitread.go; no observation sent over it, obsfit.go), and
// graceful drain. It must not know how harnesses are driven: everything
// about an episode goes through session.Session.
//
// A fork's siblings (fork.go: the /ws fork frame, POST /fork) are sessions
// of the same registry: their slots, attaching and lifetime are the
// server's like every other session's, and so is which sibling was forked
// from which episode. That keeps the package bigger than 3,000 lines: every
// surface's handlers work on that one registry, and the parts that stand
// alone are packages of their own (console, metrics, describe, trainer).
package server
