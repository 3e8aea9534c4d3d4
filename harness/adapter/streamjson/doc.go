// Package streamjson is the adapter for Claude Code's stream-json protocol
// (`claude -p --input-format stream-json --output-format stream-json
// --verbose`), which Qwen Code also speaks. One long-lived agent process
// serves a whole episode: each turn is one user line on stdin, and the
// agent's result line ends it.
//
// The adapter owns the agent's command line beyond Launch.Command (protocol
// flags, model, permission mode, partial messages, the MCP injection through
// --mcp-config and, for Claude, --strict-mcp-config), the control protocol
// (initialize at start-up, interrupt, and answers to the agent's own
// requests), and the mapping of output lines onto harness events:
//
//	assistant text block            -> text_output {text}
//	assistant thinking block        -> llm_chunk {content, index, thought: true}
//	                                   (only without partial messages)
//	assistant tool_use block        -> tool_call {tool_name, arguments, call_id[, mcp_server, mcp_tool]}
//	user tool_result block          -> tool_result {tool_name, result, error, call_id}
//	stream_event text/thinking delta -> llm_chunk {content, index[, thought]}
//	synthetic assistant with error  -> error {message, recoverable: false}
//	system/init                     -> TurnResult.Extra (session_id, model, tools, mcp_servers, ...)
//	result                          -> the turn's end; usage, cost, durations into Extra
//	a stdout line that is not JSON  -> text_output
//
// Forks (fork.go) use Claude Code's own resume: ForkState names the
// agent's session (mechanism harness.ForkResume) once its session file
// under CLAUDE_CONFIG_DIR/projects holds the turn's last message, and a
// Start with Launch.Fork adds --resume ID --fork-session after linking the
// session file, found in the sibling's copy of HOME, into the project
// directory of the sibling's working directory (ProjectDirName).
//
// Lines the agent prints before it answers initialize are mapped in the
// first turn: at most 1,024 of them, and at most the launch's output limit
// (episode.output_limit) of output before the answer, beyond which start-up
// fails (startup_failed, naming the knob).
//
// Subagent lines keep their parent_tool_use_id in the event data. The final
// text of a turn is result.result. See Adapter for how each result subtype
// ends a turn.
//
// Records the agent's output causes (an unreadable system/init or
// control_response, a result line printed before the turn, a control
// request that cannot be answered) go through the episode's
// adapterkit.LogLimit: the first 8 of a kind in full, then counts, with a
// summary at each power of two and at Stop.
//
// The adapter must not touch anything outside the agent's process tree,
// the MCP config file it writes under the episode's HOME and, for a forked
// sibling, the session file it links within that HOME: it never decides
// rewards, never sees the trainer's connection, and starts the agent only
// through package process.
package streamjson
