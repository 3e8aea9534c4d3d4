package agents

import "github.com/harnessd/harnessd/harness/adapter/acp"

// ClaudeACP is the preset "claude-acp": Claude Code through
// claude-agent-acp (adapter acp). It shares Claude Code's set-up.
func ClaudeACP() *Preset {
	return &Preset{
		Name:    "claude-acp",
		Title:   "Claude Code through claude-agent-acp",
		Adapter: acp.Name,
		Dialect: "anthropic",
		Program: "claude-agent-acp",
		// The session runs in bypassPermissions mode: no permission round
		// trips (set harness.options.mode to "default" to have every tool
		// use answered by the permission policy instead).
		Options:      map[string]any{"mode": "bypassPermissions"},
		Package:      "@zed-industries/claude-agent-acp",
		Version:      "0.23.1",
		Verified:     true,
		BuiltinTools: claudeTools,
		ToolPrefix:   "mcp__S__",
		ForkNote:     "would resume by ACP session/load or session/resume; not built (the session drives replay)",
		Setup:        claudeSetup,
	}
}
