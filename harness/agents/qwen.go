package agents

import (
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/acp"
)

// Qwen is the preset "qwen": Qwen Code in ACP mode (adapter acp). It shares
// Gemini CLI's quiet settings.
func Qwen() *Preset {
	return &Preset{
		Name:     "qwen",
		Title:    "Qwen Code",
		Adapter:  acp.Name,
		Dialect:  "openai-chat",
		Program:  "qwen",
		Args:     []string{"--acp", "--approval-mode", "yolo", "--exclude-tools", "tool_search", "--auth-type", "openai"},
		Package:  "@qwen-code/qwen-code",
		Version:  "0.15.10",
		Verified: true,
		BuiltinTools: []string{"agent", "ask_user_question", "edit", "exit_plan_mode", "glob", "grep_search",
			"list_directory", "monitor", "read_file", "read_many_files", "run_shell_command", "save_memory",
			"send_message", "skill", "task", "task_stop", "todo_write", "tool_search", "web_fetch", "web_search",
			"write_file"},
		DefaultModel: "qwen3-coder-plus",
		ToolPrefix:   "mcp__S__",
		Fork:         harness.ForkResume,
		ForkNote:     "resume: ACP session/load of the parent's session, linked into the project directory of the sibling's working directory (built; verified with 0.15.10)",
		Resume:       qwenResume,
		ForkSettle:   qwenSettle,
		Setup:        qwenSetup,
	}
}

// qwenSetup writes ~/.qwen/settings.json: Gemini's quiet settings, the
// OpenAI auth type, and no managed memory extraction (an extra model call
// after every turn). The endpoint goes in OPENAI_* variables.
func qwenSetup(e *Episode) error {
	s := geminiSettings()
	s["memory"] = map[string]any{"enableManagedAutoMemory": false}
	m := e.Model
	if m.Key != "" {
		s["security"] = map[string]any{"auth": map[string]any{"selectedType": "openai"}}
		e.Setenv("OPENAI_API_KEY", m.Key)
	}
	if m.Custom() {
		e.Setenv("OPENAI_BASE_URL", m.OpenAIBase())
	}
	if m.Name != "" {
		s["model"] = map[string]any{"name": m.Name}
		e.Setenv("OPENAI_MODEL", m.Name)
	}
	return e.WriteJSON(".qwen/settings.json", s)
}
