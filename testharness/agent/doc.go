// Package agent is the scriptable fake harness used by harnessd's tests and
// demo: its directive executor. Directives in each user message drive it
// deterministically: reply, call an environment tool over MCP, call the
// model, sleep, wait for a file, hang, crash, exit between turns, write to
// stderr, flood stdout, print garbage, spawn and detach children, attack
// the sandbox from inside, declare the task done. The directive grammar is
// documented in testharness/README.md.
//
// The Executor is independent of the wire protocol: it reports what a turn
// produces to a Sink and how the turn ended as an Outcome. Each wire
// protocol is a front end in a package of its own below this one — jsonl
// (harnessd's line protocol v1), acp (Agent Client Protocol), streamjson
// (Claude Code's stream-json), tui (an interactive terminal program, for
// the pty adapter), oneshot (one turn per process, like codex exec) — over
// what they share in frontend; testharness/cmd/testharness maps --protocol
// names to them. They are apart because each is a program of its own that
// a different adapter is tested against, and the executor stays small
// enough to read in one sitting (and to grow with attacks) without them. A
// front end adds directives of its own through Executor.Directives.
//
// This package owns the common directive grammar (Parse, the executor's
// table), the attacks of the attack directive (attack*.go), the MCP tool
// client and the helper commands (sleep, detach); it must not know any wire
// protocol. Like its front ends it must not import harnessd's own packages
// (internal/bearer aside, the header's spelling): it plays the part of a
// foreign program.
package agent
