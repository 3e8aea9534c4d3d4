// Package agent is the scriptable fake harness used by harnessd's tests and
// demo. Directives in each user message drive it deterministically: reply,
// call an environment tool over MCP, sleep, wait for a file, hang, crash,
// exit between turns, write to stderr, flood stdout, print garbage, spawn
// and detach children, declare the task done. The directive grammar is documented in
// testharness/README.md.
//
// The directive executor (Executor) is independent of the wire protocol; the
// jsonl front end (RunJSONL) speaks harnessd's line protocol v1; the
// stream-json front end (RunStreamJSON) speaks Claude Code's stream-json
// protocol, with directives of its own (API errors, agent limits,
// permission requests). The package
// must not import harnessd's own packages: it plays the part of a foreign
// program.
package agent
