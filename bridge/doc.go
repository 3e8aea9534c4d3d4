// Package bridge is harnessd's MCP tool bridge: the trust boundary between a
// harness (a CLI agent) and the environment's tools.
//
// It owns three things:
//
//   - Sources: upstream tool servers. A stdio MCP server the bridge starts and
//     supervises through package process (NewStdioSource), a streamable-HTTP
//     MCP server reached by URL (NewHTTPSource), and tools written in Go
//     (NewGoSource). Each lists its tools (all pages, schemas kept as raw
//     JSON) and serves calls; a crashed or hung upstream makes its calls fail
//     with a clear error instead of wedging anything, and can be restarted.
//   - The Catalog: the union of the sources' tools under the conflict rules of
//     OpenEnv's harness RFC (reserved orchestration names rejected, harness
//     built-ins shadowed by an env_ prefix, duplicates refused naming both
//     sources) plus expose/hide patterns. Hidden tools (e.g. a rubric's
//     grader) are callable by the daemon through Catalog.Call but never
//     listed or callable through the Server.
//   - The Server: a loopback streamable-HTTP MCP endpoint
//     (http://127.0.0.1:PORT/mcp) guarded by a per-start random bearer
//     token, serving the catalog's visible tools with their schemas byte for
//     byte, and reporting every call to OnCall/OnResult hooks — the
//     authoritative record of environment tool use. It is a door: it holds
//     at most ServerOptions.Door.MaxConns connections, closes idle ones,
//     and closes the connection after answering a request without the
//     token (package doorcap; its serve loop is package httpgroup's); its
//     POST bodies in flight share a budget (Door.BodyBytes, by default
//     twice MaxBodyBytes: 16 MiB; 503 door_body_budget) and a 30 s read
//     timeout; and it keeps at most ServerOptions.MaxSessions MCP sessions
//     (64), ending the least recently used idle one to make room, refusing
//     an initialize (503, bridge_session_cap) only when every session has
//     a request in flight (sessions.go).
//   - Records and replays, for forks of an episode (record.go): a Server
//     can keep every served call (ServerOptions.Record, bounded; Records),
//     and answer a fork's calls from such a record without calling the
//     tools (ServerOptions.Replay) until it is used up or a call differs
//     from the recorded one (a wire.Divergence, ServerOptions.OnDivergence).
//
// The package knows nothing of harnesses, sessions, turns or rewards: callers
// decide which sources to start, which names are the harness's built-ins,
// what is hidden, and what to do with the call records. It must not start
// processes other than through package process (the daemon is a child
// subreaper and reaps pids it did not start), and package process knows
// nothing of MCP.
//
// Progress notifications and cancellation pass through where mcp-go allows:
// a harness's progress token is replaced by a bridge token upstream and
// progress is relayed back while the call runs. Progress an upstream sends
// after its response is dropped (mcp-go's stdio server can write a response
// before the progress notifications that preceded it), and a 2026-07-28
// client can still lose a notification to a race in mcp-go's HTTP server
// (mark3labs/mcp-go#969; the event store the Server installs avoids it for
// earlier protocol versions). Ending the harness's HTTP request cancels the
// upstream call: stdio upstreams get notifications/cancelled, HTTP upstreams
// see their request end.
package bridge
