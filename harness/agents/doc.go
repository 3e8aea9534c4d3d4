// Package agents holds presets for real CLI coding agents: Claude Code,
// Gemini CLI, OpenCode, Qwen Code, Copilot CLI, Codex (through codex-acp),
// Claude through claude-agent-acp, and Goose. A preset knows which adapter
// drives the agent (acp or claude stream-json), how to find its program, the
// flags it needs to run unattended, how to point it at a model endpoint
// (model.url, model.name, model.api_key_env mapped onto the agent's own
// variables and config files), how to turn off its side traffic, and its
// built-in tool names.
//
// # How a preset plugs in
//
// Apply fills an environment configuration whose harness.agent names a
// preset: the adapter becomes "agent:NAME", the command the located program
// with the preset's arguments, and the preset's adapter options and built-in
// tool names are filled in under the configuration's own (a key the
// configuration sets wins). Apply runs before Config.Normalize.
//
// Presets are values (one constructor per agent, one file each: ClaudeCode,
// Gemini, Goose, ...); nothing registers itself. A program adds the presets
// it links to a Catalog, which Apply and harness.agent look names up in, and
// adds each preset's wrapping adapter "agent:NAME" (Factory) to its
// harness.Registry; cmd/harnessd/adapters.go does both. The wrapping
// adapter's Start prepares the episode (Preset.Setup writes the agent's
// settings files into the episode's private HOME and computes environment
// variables: XDG directories and the agent's config dir under that HOME,
// model endpoint and key, telemetry and update checks off), extends the
// Launch's environment and command, and delegates to the inner adapter (acp
// or claude), which injects the tool bridge itself (ACP: session/new; Claude
// Code: --mcp-config). Every other Adapter method delegates unchanged.
// Variables the configuration sets (harness.env, or passed with
// harness.pass_env) win over the preset's.
//
// # Forking
//
// Each preset says how the agent's state reaches a forked sibling
// (Preset.Fork, Preset.ForkNote): Claude Code by its own resume (the
// claude adapter's harness.Forker, which the wrapping adapter's ForkState
// reaches) and Qwen Code by ACP session/load (the acp adapter's, with the
// preset's Resume and ForkSettle hooks moving its session to the sibling's
// working directory and waiting until it is written down); the others
// would resume through ACP session/load or their CLI's resume flag, which
// is not built, so their ForkState returns harness.ErrForkUnsupported and
// the session forks them by replay.
//
// # Finding the programs
//
// Locate looks for a preset's program in the agents directory first (the
// --agents-dir flag, else $HARNESSD_AGENTS_DIR: a node_modules/.bin
// directory, or a directory holding node_modules/.bin such as
// integration/agents), then on PATH. An explicitly configured directory wins
// over PATH so that a pinned install is what runs. The version of an npm
// install is read from the package's package.json; nothing is executed.
//
// # What it must not touch
//
// The package never writes outside the episode's HOME, never reads the
// user's own agent configuration, never puts the orchestration API token
// anywhere, and keeps the model API key in the harness's environment only
// (config files name the variable instead of holding the key, where the
// agent allows it). It does not speak any wire protocol itself: that is the
// inner adapter's job.
package agents
