package agents

import (
	"github.com/harnessd/harnessd/harness/adapter/acp"
)

// OpenCode is the preset "opencode": OpenCode in ACP mode (adapter acp).
func OpenCode() *Preset {
	return &Preset{
		Name:     "opencode",
		Title:    "OpenCode",
		Adapter:  acp.Name,
		Dialect:  "openai-chat",
		Program:  "opencode",
		Args:     []string{"acp"},
		Package:  "opencode-ai",
		Version:  "1.18.33",
		Verified: true,
		BuiltinTools: []string{"bash", "edit", "glob", "grep", "list", "patch", "read", "skill", "task",
			"todoread", "todowrite", "webfetch", "websearch", "write"},
		DefaultModel: "default",
		ToolPrefix:   "S_",
		ForkNote:     "would resume by ACP session/load or --session; not built (the session drives replay)",
		Setup:        opencodeSetup,
	}
}

// opencodeSetup writes the episode's opencode.json (named by
// OPENCODE_CONFIG): every permission allowed, no sharing, no auto-update,
// and, with an endpoint, an @ai-sdk/openai-compatible provider whose key is
// read from OPENAI_API_KEY ({env:} interpolation keeps it out of the file)
// and an empty models catalog (OPENCODE_MODELS_PATH).
func opencodeSetup(e *Episode) error {
	cfg := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"permission": map[string]any{"*": "allow"},
		// No git snapshot of the workspace at every step, and no session
		// title call (an auxiliary model request on the first turn).
		"snapshot": false,
		"agent":    map[string]any{"title": map[string]any{"disable": true}},
	}
	m := e.Model
	if m.Custom() {
		cfg["provider"] = map[string]any{providerID: map[string]any{
			"npm":  "@ai-sdk/openai-compatible",
			"name": "harnessd model endpoint",
			"options": map[string]any{
				"baseURL": m.OpenAIBase(),
				"apiKey":  "{env:OPENAI_API_KEY}",
			},
			"models": map[string]any{m.Name: map[string]any{"name": m.Name}},
		}}
		cfg["model"] = providerID + "/" + m.Name
		cfg["small_model"] = providerID + "/" + m.Name
		// An empty models.dev catalog: the endpoint's provider is all in
		// the config, and building opencode's bundled catalog of every
		// provider's models is about a quarter of its start's CPU (3.5 ->
		// 2.6 CPU-s), which a loaded host turns into tens of seconds.
		catalog := ".config/opencode/models.json"
		if err := e.WriteJSON(catalog, map[string]any{}); err != nil {
			return err
		}
		e.Setenv("OPENCODE_MODELS_PATH", e.Path(catalog))
	} else if m.Name != "" {
		cfg["model"] = m.Name // provider/model of the agent's own catalog
	}
	if m.Key != "" {
		e.Setenv("OPENAI_API_KEY", m.Key)
	}
	path := ".config/opencode/opencode.json"
	if err := e.WriteJSON(path, cfg); err != nil {
		return err
	}
	e.Setenv("OPENCODE_CONFIG", e.Path(path))
	for _, v := range []string{"OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_LSP_DOWNLOAD",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_SHARE", "OPENCODE_DISABLE_CLAUDE_CODE", "OPENCODE_DISABLE_EMBEDDED_WEB_UI"} {
		e.Setenv(v, "true")
	}
	return nil
}
