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
// from which episode.
//
// The package is bigger than 3,000 lines (about 3,900 with the fork's
// surfaces and the /ws turn path of issue 28, wsloop.go running a
// connection's frames on the goroutine that read them): every surface's
// handlers work on the one registry, and the parts that stand alone are
// packages of their own (console, metrics, describe, trainer). It should
// not stay so: the WebSocket connection machinery (wsconn.go, wsloop.go,
// about 600 lines) is the part to move into an internal package of its own.
package server
