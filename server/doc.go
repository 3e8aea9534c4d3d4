// Package server exposes harness environments over HTTP and WebSocket:
// OpenEnv's generic /ws protocol (reset, step, state, close, mcp), the same
// operations over stateful HTTP (/reset, /step, /state), the streaming
// /harness socket of production mode, OpenEnv's /mcp JSON-RPC route, and
// /health, /metadata and /schema, and in simulation mode the web console
// (GET /web, web.go): one embedded page of plain HTML, CSS and JavaScript
// (go:embed of web/; no library, no CDN, no build step) over a JSON API
// under /web/api/ and a live feed of server-sent events. The console learns
// of sessions from the server's own reset and step paths (webhooks.go); its
// feed never blocks a session: each viewer has a small buffer and a viewer
// that falls behind loses messages and is told (webfeed.go).
//
// The server owns connections, session capacity and lifetime (slots are
// reserved before a session is built; idle HTTP sessions may be reaped),
// authentication (an optional API token, and refusal of connections whose
// peer process belongs to a harness tree), wire validation and error codes
// (every client string checked where it enters, validate.go), the bounds of
// what it reads and writes (no client frame or body held past the frame
// limit, limitread.go; no observation sent over it, obsfit.go), and
// graceful drain. It must not know how harnesses are driven: everything
// about an episode goes through harness.Session.
package server
