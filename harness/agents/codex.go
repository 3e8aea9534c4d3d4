package agents

import (
	"fmt"
	"strings"

	"github.com/harnessd/harnessd/harness/adapter/acp"
	"github.com/harnessd/harnessd/harness/internal/kit"
)

// Codex is the preset "codex": OpenAI Codex through codex-acp (adapter acp).
func Codex() *Preset {
	return &Preset{
		Name:     "codex",
		Title:    "OpenAI Codex through codex-acp",
		Adapter:  acp.Name,
		Dialect:  "openai-responses",
		Program:  "codex-acp",
		Package:  "@zed-industries/codex-acp",
		Version:  "0.16.0",
		Verified: true,
		BuiltinTools: []string{"apply_patch", "create_goal", "exec_command", "get_goal", "list_mcp_resource_templates",
			"list_mcp_resources", "read_mcp_resource", "request_user_input", "shell", "update_goal", "update_plan",
			"view_image", "web_search", "write_stdin"},
		// A model of Codex's catalog: for one it does not know, codex-acp
		// starts every turn's text with a "Model metadata ... not found"
		// warning.
		DefaultModel: "gpt-5.4",
		ToolPrefix:   "mcp__S (namespace) ",
		ForkNote:     "would resume by ACP session/load (codex-acp) or codex exec resume; not built (the session drives replay)",
		Setup:        codexSetup,
	}
}

// codexSetup writes $CODEX_HOME/config.toml: no approvals and no sandbox
// (the environment is the sandbox), no update check, and with an endpoint a
// Responses-API model provider whose key is read from OPENAI_API_KEY
// (env_key keeps it out of the file). Codex speaks only the Responses API.
func codexSetup(e *Episode) error {
	var b strings.Builder
	m := e.Model
	if m.Name != "" {
		fmt.Fprintf(&b, "model = %s\n", kit.TOMLString(m.Name))
	}
	if m.Custom() {
		fmt.Fprintf(&b, "model_provider = %s\n", kit.TOMLString(providerID))
	}
	b.WriteString(`approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
hide_agent_reasoning = false

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"
`)
	if m.Custom() {
		fmt.Fprintf(&b, "\n[model_providers.%s]\nname = %s\nbase_url = %s\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
			providerID, kit.TOMLString("harnessd model endpoint"), kit.TOMLString(m.OpenAIBase()))
	}
	if m.Key != "" {
		e.Setenv("OPENAI_API_KEY", m.Key)
	}
	if err := e.WriteFile(".codex/config.toml", []byte(b.String())); err != nil {
		return err
	}
	e.Setenv("CODEX_HOME", e.Path(".codex"))
	return nil
}
