package agents

import (
	"github.com/harnessd/harnessd/harness/acp"
)

func init() {
	Register(&Preset{
		Name:    "gemini",
		Title:   "Gemini CLI",
		Adapter: acp.Name,
		Program: "gemini",
		// --yolo: no approvals (the ACP session starts in mode "yolo");
		// --skip-trust: without it an untrusted folder silently downgrades
		// YOLO (verified with 0.61.0).
		Args:     []string{"--acp", "--yolo", "--skip-trust"},
		Package:  "@google/gemini-cli",
		Version:  "0.61.0",
		Verified: true,
		// The tools offered to the model by 0.61.0, and a few of earlier versions.
		BuiltinTools: []string{"activate_skill", "glob", "google_web_search", "grep_search", "invoke_agent",
			"list_background_processes", "list_directory", "read_background_output", "read_file", "read_many_files",
			"replace", "run_shell_command", "save_memory", "search_file_content", "update_topic", "web_fetch",
			"write_file", "write_todos"},
		DefaultModel: "gemini-2.5-flash",
		ToolPrefix:   "mcp_S_",
		Setup:        geminiSetup,
	})
	Register(&Preset{
		Name:     "qwen",
		Title:    "Qwen Code",
		Adapter:  acp.Name,
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
		Setup:        qwenSetup,
	})
}

// geminiSettings are the settings shared by Gemini CLI and its fork Qwen
// Code: no telemetry, usage statistics, update checks or checkpoints.
func geminiSettings() map[string]any {
	return map[string]any{
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general": map[string]any{
			"disableAutoUpdate": true,
			"disableUpdateNag":  true,
			"checkpointing":     map[string]any{"enabled": false},
		},
	}
}

// geminiSetup writes ~/.gemini/settings.json (auth type pinned to the API
// key when an endpoint or key is configured: auto-detection fails under a
// custom base URL) and maps the model knobs.
func geminiSetup(e *Episode) error {
	s := geminiSettings()
	m := e.Model
	if m.Key != "" {
		s["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}
		e.Setenv("GEMINI_API_KEY", m.Key)
	}
	if m.Custom() {
		e.Setenv("GOOGLE_GEMINI_BASE_URL", m.Root)
	}
	if m.Name != "" {
		s["model"] = map[string]any{"name": m.Name}
		e.Setenv("GEMINI_MODEL", m.Name)
	}
	e.Setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
	return e.WriteJSON(".gemini/settings.json", s)
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
