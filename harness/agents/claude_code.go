package agents

import (
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/streamjson"
)

// ClaudeCode is the preset "claude-code": Claude Code driven over stream-json
// (adapter claude).
func ClaudeCode() *Preset {
	return &Preset{
		Name:    "claude-code",
		Title:   "Claude Code",
		Adapter: streamjson.Name,
		Dialect: "anthropic",
		Program: "claude",
		// Permissions are bypassed (the claude adapter adds IS_SANDBOX=1 as
		// root, which Claude Code requires for that). Session files are
		// kept (under the episode's CLAUDE_CONFIG_DIR, so within its HOME
		// and its quota): a fork resumes from them.
		Options:      map[string]any{"permission_mode": "bypassPermissions"},
		Package:      "@anthropic-ai/claude-code",
		Version:      "2.1.197",
		Verified:     true,
		BuiltinTools: claudeTools,
		ToolPrefix:   "mcp__S__",
		Fork:         harness.ForkResume,
		ForkNote:     "resume: --resume ID --fork-session against the sibling's copy of HOME (built; verified with 2.1.197)",
		Setup:        claudeSetup,
	}
}

// claudeTools are Claude Code's built-in tools: those of system/init in
// 2.1.197, and a few of earlier versions.
var claudeTools = []string{"Agent", "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterWorktree",
	"ExitWorktree", "Glob", "Grep", "LS", "MultiEdit", "NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup",
	"SendMessage", "Skill", "Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
	"TodoWrite", "WebFetch", "WebSearch", "Workflow", "Write"}

// claudeSetup points Claude Code (or the Agent SDK inside claude-agent-acp)
// at a private config dir, the model endpoint, and turns its side traffic
// off.
func claudeSetup(e *Episode) error {
	if err := e.MkdirAll(".claude"); err != nil {
		return err
	}
	e.Setenv("CLAUDE_CONFIG_DIR", e.Path(".claude"))
	e.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	e.Setenv("DISABLE_TELEMETRY", "1")
	e.Setenv("DISABLE_AUTOUPDATER", "1")
	e.Setenv("DISABLE_ERROR_REPORTING", "1")
	// Connect the MCP servers before the first model call instead of in
	// the background: otherwise the first request's tools depend on how
	// fast the bridge answered (a replay then diverges on them, and the
	// first turn may run without the environment's tools). Claude Code
	// reads the variable as a boolean; "0" turns its nonblocking mode off.
	e.Setenv("MCP_CONNECTION_NONBLOCKING", "0")
	if e.Root {
		// Bypassing permissions as root needs it (verified with 2.1.197;
		// the same gate applies in claude-agent-acp).
		e.Setenv("IS_SANDBOX", "1")
	}
	m := e.Model
	if m.Custom() {
		e.Setenv("ANTHROPIC_BASE_URL", m.Root)
	}
	if m.Key != "" {
		e.Setenv("ANTHROPIC_API_KEY", m.Key)
	}
	if m.Name != "" {
		// Pin every tier, so that sub-agents and background tasks do not ask
		// the endpoint for Anthropic model names it does not serve.
		for _, v := range []string{"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
			"ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"} {
			e.Setenv(v, m.Name)
		}
	}
	return nil
}
