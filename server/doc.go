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
// It is bigger than 3,000 lines (about 3,400 with the /ws turn path of
// issue 28: wsloop.go runs a connection's frames on the goroutine that read
// them). It must not stay so: the WebSocket connection machinery (wsconn.go,
// wsloop.go, about 600 lines) is the part to move into an internal package
// of its own; that was left out of the issue-28 change so that the fork
// frame, added to ws.go's dispatch in parallel, merges as one case.
package server
