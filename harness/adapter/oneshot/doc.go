// Package oneshot is the adapter for harnesses that run one process per turn
// and resume a saved session: "codex exec --json" then "codex exec resume
// ID", "gemini -p" with "--resume ID", "opencode run" with "-s ID", or any
// program with such a mode. The harness the Session sees is the resumable
// session, not a process: Alive is true from Start to Stop.
//
// Each turn runs a command built from a template (options command, and
// first_command for turn 1 when starting differs from resuming). The
// placeholders {message}, {session_id}, {turn} and {workspace} are
// substituted inside each template argument in a single pass, with no shell:
// the message is part of exactly one argument whatever it holds (quotes,
// "$(...)", newlines, a leading "--"); templates should put "--" before a
// "{message}" argument when the program parses options. stdin is closed.
//
// The turn ends when the process exits and its stdout is drained. stdout is
// read in a format: text (lines, control sequences stripped; the response is
// all of it), jsonl (harnessd's line-protocol events plus a
// {"type":"session","session_id":...} line; turn_complete is optional), or
// the JSON streams of codex, gemini and opencode, whose messages, reasoning,
// tool calls and tool results map onto text_output / llm_chunk / tool_call /
// tool_result events, whose final text (after the last tool call) is the
// response, and whose usage goes to TurnResult.Extra. The session id is
// captured from the first turn's output (and updated by any later one): by
// session_regex over stdout and stderr lines, or by session_field, a dotted
// JSON path (defaults: thread_id for codex, session_id for gemini and jsonl,
// sessionID for opencode).
//
// Exit status: Extra["exit"] always holds it. A non-zero exit (or death by a
// signal) of a turn that was not interrupted is a harness_crashed failure
// with the status and stderr tail, unless nonzero_ok is set, which makes it
// an ordinary end of turn: one-shot agents exit non-zero when their turn
// failed (an API error, a refused tool), and an environment that wants the
// episode to go on after such a turn says so.
//
// Interrupt sends SIGINT to the turn's process group and kills the group
// after interrupt_grace; the turn returns Cancelled with what it got. Stop
// kills a running turn's tree. Every turn's tree is stopped when the turn
// ends, so nothing a turn started outlives it.
//
// Start writes the MCP bridge into the agent's config file in the episode's
// HOME when mcp_config names a shape (gemini, opencode, codex). The adapter
// owns that file and the turn processes; it must not touch anything else in
// HOME or the workspace, and it starts processes only through package
// process.
package oneshot
