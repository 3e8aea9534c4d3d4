package agents

import (
	"github.com/harnessd/harnessd/harness/adapter/acp"
)

// Gemini is the preset "gemini": Gemini CLI in ACP mode (adapter acp).
func Gemini() *Preset {
	return &Preset{
		Name:    "gemini",
		Title:   "Gemini CLI",
		Adapter: acp.Name,
		Dialect: "gemini",
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
		ForkNote:     "would resume by ACP session/load (0.61.0 advertises loadSession); not built: its sessions belong to the project of a working directory (projects.json, .project_root, projectHash), and relocating them into a sibling at another path loaded the session in only 1 of 4 runs (the session drives replay)",
		Setup:        geminiSetup,
	}
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
