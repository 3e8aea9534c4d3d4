// Package acp is the adapter for the Agent Client Protocol v1 (JSON-RPC 2.0,
// one message per line over the agent's stdio), spoken by Gemini CLI
// (--acp), OpenCode (acp), Qwen Code (--acp), Copilot CLI (--acp), Goose
// (acp) and the Claude and Codex ACP adapters.
//
// The adapter owns the agent's process tree (started through package
// process, in its own process group), the JSON-RPC connection over its
// stdin and stdout, and the one ACP session of an episode: initialize,
// session/new with the tool bridge injected as an http MCP server (bearer
// header in the list form), optional authenticate and session/set_mode, one
// session/prompt per turn (its response is the turn boundary), session/cancel
// for Interrupt, and the answers to the agent's requests: permission requests
// by a configured policy, and method-not-found for the fs/* and terminal/*
// methods it does not advertise. session/update notifications become events
// of source "harness"; the response of a turn is its agent message text.
//
// The adapter must not touch anything beyond that: it does not decide
// rewards, does not talk to the bridge or the tool servers (it only hands
// their address to the agent), does not write files in the workspace or
// HOME, and never execs a process except through the Launch's Supervisor.
//
// # Options (harness.options, decoded strictly)
//
//	mode                session mode set with session/set_mode after session/new
//	permission          allow (default) | deny: the answer to session/request_permission
//	deny_patterns       regular expressions (RE2, unanchored); a permission request
//	                    whose tool title or name matches one is rejected
//	initialize_timeout  bound on the initialize request alone (within startup_timeout)
//	auth_method         authMethods id passed to authenticate when session/new
//	                    answers "authentication required" (-32000)
//	mcp_stdio_command   argv of a stdio MCP server that proxies to the bridge, used
//	                    only for agents without http MCP support; it receives
//	                    HARNESSD_MCP_URL and HARNESSD_MCP_TOKEN in its environment
//
// # Events
//
//	agent_message_chunk (text)  llm_chunk {content, index[, message_id]}; text joins the response
//	agent_thought_chunk         llm_chunk {content, index, thought: true}
//	non-text chunk              llm_chunk {content: "", index, block[, thought]}
//	tool_call                   tool_call {tool_name, arguments, call_id, title, kind, status}
//	tool_call_update, terminal  tool_result {tool_name, call_id, result, error, status, arguments}
//	plan                        llm_chunk {content: "", index, plan: entries}
//	usage_update                TurnResult.Extra["usage_update"]
//	anything else               ignored (logged at debug)
//
// index counts the llm_chunk events of a turn from 0. tool_name is the tool
// call's name when the agent gives one, else its title. A tool call the
// agent first reports as already finished yields both events; an update for
// an unknown tool call id opens it with a tool_call event. Empty text chunks
// are ignored (their _meta.usage is kept).
//
// # Turn results
//
// TurnResult.Extra holds "stop_reason" (the prompt's stopReason); "usage"
// (the prompt result's usage, else the last _meta.usage of a chunk); "meta"
// (the prompt result's _meta, e.g. Gemini's quota token counts);
// "usage_update" (the last usage_update); "permissions" (one record per
// permission request answered during the turn); and, on the first turn after
// Start only, "acp": the session facts of Info. Cancelled is set when
// stopReason is "cancelled", or when the agent answers a prompt that
// Interrupt cancelled with a JSON-RPC error (then Extra["error"] holds it).
// Done is never set: ACP has no notion of a finished task. Updates that
// arrive after a turn's response (or after a turn ended by its deadline)
// are read, and reported, by the next turn.
//
// # Failures
//
// Start fails with startup_failed (exit status and stderr tail when the
// agent died). During a turn: the agent's exit or end of output is
// harness_crashed (with exit status and stderr tail); a JSON-RPC error answer
// to session/prompt is protocol_error carrying the agent's code and message
// (the agent could not run the turn: an LLM or auth failure); more output
// than TurnInput.OutputLimit, or one line longer than Launch.MaxLineBytes, is
// output_limit. Stdout lines that are not JSON-RPC (agents print warnings)
// are logged and ignored but count towards the output limit; responses to
// unknown ids are logged.
//
// # Bounds on what the agent can make the daemon hold
//
// Logs: every record the agent's output causes (the lines above, a
// malformed session/update, a call of an fs/ or terminal/ method, a
// permission request without a suitable option) goes through the episode's
// adapterkit.LogLimit: the first 8 of a kind in full, then counts, with a
// summary at each power of two and at Stop (docs/deploy.md, Logs).
//
// Answers to the agent's requests are written in order by one goroutine
// from a queue of at most 64 answers or 1 MiB. An agent that does not read
// its stdin fills the pipe and then the queue; the adapter then stops
// reading the agent until the queue has room, and the turn ends at its
// deadline (turn_timeout). Every write of the connection waits for the one
// before under its own context, so a prompt or session/cancel queued behind
// an unread answer still ends at its deadline.
//
// Tool calls: the table that maps a call's updates to its tool_call and
// tool_result events is the episode's, but each turn drops the calls that
// finished and those without an update during the last turn, so it holds at
// most two turns' calls. A call the agent never finishes has a tool_call
// event and no tool_result; an update of a dropped call opens it again,
// with a second tool_call event.
//
// # Why not github.com/coder/acp-go-sdk
//
// The SDK (v0.13.0, weighed for issue 21) was not taken: its connection
// reads the agent's stdout itself, with a bufio.Scanner that allocates 1
// MiB per connection up front (the idle budget is 0.5 MiB per session) and
// a fixed 10 MiB line limit, where this adapter reads through package
// process, which bounds a line by harness.max_line_bytes and a turn's
// output by episode.output_limit and classifies a flood as output_limit;
// and it logs and skips a line it cannot parse, which this adapter counts
// (and a line past the limit ends the turn). Its generated schema (11.6k
// lines) covers all of ACP; the adapter needs the client side of
// initialize, session/new, session/prompt, session/cancel, session/update
// and the permission request (schema.go, about 120 lines).
package acp
