package agents

import "github.com/harnessd/harnessd/harness/adapter/acp"

// Goose is the preset "goose": Goose in ACP mode (adapter acp; unverified:
// Goose is not on npm).
func Goose() *Preset {
	return &Preset{
		Name:         "goose",
		Title:        "Goose",
		Adapter:      acp.Name,
		Dialect:      "openai-chat",
		Program:      "goose",
		Args:         []string{"acp"},
		BuiltinTools: []string{"developer__shell", "developer__text_editor"},
		DefaultModel: "gpt-4o",
		ToolPrefix:   "S__",
		ForkNote:     "would resume by ACP session/load or goose session --resume; not built, and Goose is unverified (the session drives replay)",
		Setup:        gooseSetup,
	}
}

// gooseSetup maps the endpoint onto Goose's OpenAI provider variables
// (unverified: Goose is not on npm).
func gooseSetup(e *Episode) error {
	e.Setenv("GOOSE_MODE", "auto")
	e.Setenv("GOOSE_DISABLE_KEYRING", "true")
	e.Setenv("GOOSE_TELEMETRY_ENABLED", "false")
	m := e.Model
	if m.Custom() {
		e.Setenv("GOOSE_PROVIDER", "openai")
		e.Setenv("OPENAI_HOST", m.Root)
		e.Setenv("OPENAI_BASE_PATH", "v1/chat/completions")
	}
	if m.Key != "" {
		e.Setenv("OPENAI_API_KEY", m.Key)
	}
	if m.Name != "" {
		e.Setenv("GOOSE_MODEL", m.Name)
	}
	return nil
}
