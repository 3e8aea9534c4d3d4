package agents

import "github.com/harnessd/harnessd/harness/adapter/acp"

// Copilot is the preset "copilot": GitHub Copilot CLI in ACP mode (adapter acp).
func Copilot() *Preset {
	return &Preset{
		Name:     "copilot",
		Title:    "GitHub Copilot CLI",
		Adapter:  acp.Name,
		Dialect:  "openai-chat",
		Program:  "copilot",
		Args:     []string{"--acp", "--allow-all", "--no-auto-update", "--disable-builtin-mcps", "--no-ask-user"},
		Package:  "@github/copilot",
		Version:  "1.0.102",
		Verified: true,
		BuiltinTools: []string{"bash", "create", "edit", "fetch", "glob", "grep", "list_agents", "list_bash",
			"read_agent", "read_bash", "sql", "stop_bash", "task", "update_todo", "view", "web_fetch", "write_agent",
			"write_bash"},
		DefaultModel: "gpt-4.1",
		ToolPrefix:   "S-",
		ForkNote:     "would resume by ACP session/load or --resume; not built (the session drives replay)",
		Setup:        copilotSetup,
	}
}

// copilotSetup gives Copilot a private COPILOT_HOME and, with an endpoint,
// BYOK provider variables and offline mode (no GitHub auth, telemetry, web
// tools, GitHub MCP server or auto-update).
func copilotSetup(e *Episode) error {
	if err := e.MkdirAll(".copilot"); err != nil {
		return err
	}
	e.Setenv("COPILOT_HOME", e.Path(".copilot"))
	e.Setenv("COPILOT_AUTO_UPDATE", "false")
	m := e.Model
	if m.Custom() {
		e.Setenv("COPILOT_PROVIDER_BASE_URL", m.OpenAIBase())
		e.Setenv("COPILOT_PROVIDER_TYPE", "openai")
		e.Setenv("COPILOT_OFFLINE", "true")
	}
	if m.Key != "" {
		e.Setenv("COPILOT_PROVIDER_API_KEY", m.Key)
	}
	if m.Name != "" {
		e.Setenv("COPILOT_MODEL", m.Name)
	}
	return nil
}
