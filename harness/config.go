package harness

import "github.com/harnessd/harnessd/internal/units"

// DefaultMCPServerName is the MCP server name harnesses are told to use for
// the environment's tools.
const DefaultMCPServerName = "env"

// Config is the harness section of an environment's configuration: which
// harness runs and how it is driven. Package config decodes and validates
// it (with the model upstream beside it); an AdapterFactory gets it to make
// and check its adapter. The zero value names no harness.
type Config struct {
	// Agent names a preset (see harnessd agents) that fills Adapter,
	// Command, BuiltinTools and agent-specific setup.
	Agent string `yaml:"agent" json:"agent,omitempty"`
	// Adapter is the harness protocol: jsonl, acp, claude, exec or pty.
	Adapter string `yaml:"adapter" json:"adapter"`
	// Command is the harness's argv.
	Command []string `yaml:"command" json:"command"`
	// Env is added to the harness's environment.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// PassEnv names (or path.Match patterns of) daemon variables passed to
	// the harness beyond the default allowlist.
	PassEnv []string `yaml:"pass_env" json:"pass_env,omitempty"`
	// BuiltinTools are the harness's own tool names; environment tools with
	// these names are served as env_<name>.
	BuiltinTools []string `yaml:"builtin_tools" json:"builtin_tools,omitempty"`
	// Options are adapter-specific.
	Options map[string]any `yaml:"options" json:"options,omitempty"`

	StartupTimeout units.Duration `yaml:"startup_timeout" json:"startup_timeout"`
	StopGrace      units.Duration `yaml:"stop_grace" json:"stop_grace"`
	MaxLineBytes   units.ByteSize `yaml:"max_line_bytes" json:"max_line_bytes"`
}

// ModelAccess is how the harness reaches its model in one episode: the
// episode's model gateway, never the upstream itself.
type ModelAccess struct {
	// Root is the gateway's server root (http://HOST:PORT, no trailing
	// slash or /v1); empty without a gateway, when the agent keeps its own
	// endpoint.
	Root string
	// Name is the model name the agent should ask for ("" keeps the
	// agent's or the preset's default).
	Name string
	// Key is the per-episode key the agent presents to the gateway ("" without
	// one). It is never the upstream's real key, which stays in the daemon.
	Key string
}

// OpenAIBase is the base URL of an OpenAI-compatible API at Root: Root + "/v1".
func (m ModelAccess) OpenAIBase() string { return m.Root + "/v1" }
