package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/tasks"
)

// Defaults of an environment configuration. They are the one place where
// defaults are decided; docs/configuration.md lists them.
const (
	DefaultAdapter        = "jsonl"
	DefaultStartupTimeout = 30 * time.Second
	DefaultTurnTimeout    = 600 * time.Second
	DefaultStopGrace      = 5 * time.Second
	DefaultOutputLimit    = 16 << 20 // bytes per turn
	DefaultMaxLineBytes   = 4 << 20  // bytes per line of harness output
	// DefaultMaxTurnEvents and DefaultMaxTurnEventBytes bound what one turn
	// keeps: with the observation encoded (its metadata twice) they hold a
	// flooding turn under ~64 MiB of daemon memory.
	DefaultMaxTurnEvents     = 50_000
	DefaultMaxTurnEventBytes = 8 << 20
	DefaultToolTimeout       = 60 * time.Second
	// MaxWarm bounds warm: each standby is a running harness.
	MaxWarm = 8
)

// Config is one environment: which harness to run and how, its tools, its
// rubrics, and the limits of its episodes. Decode it with LoadConfig or
// ParseConfig, which reject unknown keys.
type Config struct {
	// Name identifies the environment (echoed in /harness session_started
	// and /metadata).
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description,omitempty"`

	Harness   HarnessConfig   `yaml:"harness" json:"harness"`
	Tools     []ToolConfig    `yaml:"tools" json:"tools,omitempty"`
	Expose    []string        `yaml:"expose" json:"expose,omitempty"`
	Hide      []string        `yaml:"hide" json:"hide,omitempty"`
	Rubrics   []rubric.Spec   `yaml:"rubrics" json:"rubrics,omitempty"`
	Episode   EpisodeConfig   `yaml:"episode" json:"episode"`
	Workspace WorkspaceConfig `yaml:"workspace" json:"workspace"`
	// Tasks is the taskset the environment serves (docs/tasks.md); Normalize
	// loads it (Taskset).
	Tasks     tasks.Source `yaml:"tasks" json:"tasks,omitzero"`
	taskset   *tasks.Set
	tasksFrom tasks.Source
	// Events is the environment's event queue (events.go): each a trigger
	// and an effect. Empty (the default) is a static environment.
	Events []EventConfig `yaml:"events" json:"events,omitempty"`
	// RecordDir, when set, receives one JSONL trajectory file per episode.
	RecordDir string `yaml:"record_dir" json:"record_dir,omitempty"`

	// Isolation is sandbox or process (isolation.go); empty lets the daemon
	// choose: sandbox wherever the host allows it.
	Isolation string `yaml:"isolation" json:"isolation,omitempty"`
	// Limits bound a sandboxed harness tree.
	Limits LimitsConfig `yaml:"limits" json:"limits,omitempty"`
	// Network is a sandboxed harness's egress policy.
	Network NetworkConfig `yaml:"network" json:"network,omitempty"`
	// Sandbox is what a sandboxed harness sees of the host beyond what
	// the daemon resolves itself.
	Sandbox SandboxConfig `yaml:"sandbox" json:"sandbox,omitzero"`
	// Warm is how many next episodes each session keeps fully prepared
	// (sandbox, workspace, tools, bridge, gateway, harness started and
	// ready), so that a reset hands one over; 0 (default) prepares none.
	Warm int `yaml:"warm" json:"warm,omitempty"`
	// Mode is simulation (default) or production: which server of each
	// mapped tool entry serves (toolmap.go), and harnessd serve's default
	// --mode.
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// User is the simulated user that writes the turns a trainer leaves
	// empty (user.go); nil: none.
	User *UserConfig `yaml:"user" json:"user,omitempty"`
}

// HarnessConfig says which harness runs and how it is driven (the fields
// of harness.Config, inline), and the model upstream its episodes' gateway
// forwards to.
type HarnessConfig struct {
	harness.Config `yaml:",inline"`
	// Model points the agent at an LLM endpoint.
	Model ModelConfig `yaml:"model" json:"model,omitempty"`
}

// ModelConfig is the episode's model: the upstream the per-episode model
// gateway forwards to, and how. When URL is set every episode gets a
// gateway and the agent is pointed at it (presets map the gateway's URL
// and key onto each agent's own variables and config files); the real key
// stays in the daemon. docs/configuration.md and docs/gateway.md describe
// the knobs.
type ModelConfig struct {
	// URL is the upstream's server root (a trailing /v1 or /v1beta is
	// dropped): an engine's chat completions live at URL/v1/chat/completions,
	// a passthrough provider gets the agent's own path appended.
	URL string `yaml:"url" json:"url,omitempty"`
	// Name is the model name the agent asks for and the gateway sends
	// upstream ("" keeps the agent's, or the preset's default).
	Name string `yaml:"name" json:"name,omitempty"`
	// APIKeyEnv names the daemon's variable holding the upstream's real
	// key; it is given to the gateway only, never to the harness.
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// Upstream is the upstream's kind: "engine" (a token-returning vLLM or
	// SGLang chat completions server: training traffic) or "passthrough"
	// (a hosted provider of Dialect: evaluation traffic). Default
	// passthrough (DefaultModelUpstream).
	Upstream string `yaml:"upstream" json:"upstream,omitempty"`
	// Dialect is the API a passthrough upstream speaks: openai-chat,
	// openai-responses, anthropic or gemini. Default: the preset's, or
	// openai-chat without a preset.
	Dialect string `yaml:"dialect" json:"dialect,omitempty"`
	// MaxTokens caps max_tokens of every engine request (0: no cap).
	MaxTokens int `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// Timeout bounds one upstream call (default 10 minutes).
	Timeout units.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// Sampling pins the sampling of every engine call (temperature, top_p,
	// top_k, min_p, seed, max_tokens) in place of the agent's own, and
	// strips the fields that distort sampling unless allowed
	// (gateway.Sampling); a reset may override it. nil: the agent's own
	// parameters are sent.
	Sampling *gateway.Sampling `yaml:"sampling" json:"sampling,omitempty"`

	endpoint ModelEndpoint // URL parsed by Normalize
}

// ToolConfig is one upstream tool server: a stdio command or an HTTP URL.
type ToolConfig struct {
	Name        string            `yaml:"name" json:"name"`
	Command     []string          `yaml:"command" json:"command,omitempty"`
	Env         map[string]string `yaml:"env" json:"env,omitempty"`
	Dir         string            `yaml:"dir" json:"dir,omitempty"`
	URL         string            `yaml:"url" json:"url,omitempty"`
	Headers     map[string]string `yaml:"headers" json:"headers,omitempty"`
	CallTimeout units.Duration    `yaml:"call_timeout" json:"call_timeout"`
	// PerEpisode restarts the tool server at every reset (fresh state).
	PerEpisode bool `yaml:"per_episode" json:"per_episode,omitempty"`
	// Simulation and Production map the entry's tools between modes: each
	// names a server (command or url) serving the same tools under the
	// same names and schemas; the configuration's mode selects which one
	// serves (toolmap.go). A mapped entry sets neither command nor url
	// itself.
	Simulation *ToolServer `yaml:"simulation" json:"simulation,omitempty"`
	Production *ToolServer `yaml:"production" json:"production,omitempty"`
	selected   bool        // the mode's side is in the plain fields
	baseDir    string      // dir before a side's was selected
	// Isolation is where a stdio server runs: "sandbox" (the default: a
	// sandbox of its own with the harness's restrictions, the workspace of
	// a per-episode server at the path the harness sees) or "host" (the
	// daemon's uid and namespaces: a side door, logged and listed by
	// check and validate).
	Isolation string `yaml:"isolation" json:"isolation,omitempty"`
	// Network gives a sandboxed stdio server the host's network (none
	// otherwise).
	Network bool `yaml:"network" json:"network,omitempty"`
}

// Tool isolation values.
const (
	ToolIsolationSandbox = "sandbox"
	ToolIsolationHost    = "host"
)

// SideDoors lists what the configuration runs on the host, outside every
// sandbox, on the harness's behalf: stdio tool servers with isolation:
// host (and, in process isolation, every stdio tool server), and the
// daemon dialling a task's MCP url on loopback, private and the host's own
// addresses (network.task_mcp_private). isolation is
// the effective one (a --isolation flag's); "" means c.Isolation. check
// and validate print them.
func (c *Config) SideDoors(isolation string) []string {
	if isolation == "" {
		isolation = c.Isolation
	}
	var out []string
	for _, t := range c.Tools {
		if len(t.Command) == 0 {
			continue
		}
		switch {
		case t.Isolation == ToolIsolationHost:
			out = append(out, fmt.Sprintf("tool server %q runs on the host as the daemon's user (isolation: host)", t.Name))
		case isolation == IsolationProcess:
			out = append(out, fmt.Sprintf("tool server %q runs on the host as the daemon's user (isolation: process)", t.Name))
		}
	}
	if c.Network.TaskMCPPrivate {
		out = append(out, "a task's mcp_servers url may name loopback, private and this host's own addresses (network.task_mcp_private)")
	}
	return out
}

// EpisodeConfig bounds an episode.
type EpisodeConfig struct {
	// TurnTimeout is the wall-clock budget of one turn.
	TurnTimeout units.Duration `yaml:"turn_timeout" json:"turn_timeout"`
	// EpisodeTimeout bounds the whole episode from reset (0: none).
	EpisodeTimeout units.Duration `yaml:"episode_timeout" json:"episode_timeout,omitempty"`
	// MaxTurns ends the episode after this many turns (0: unlimited).
	MaxTurns int `yaml:"max_turns" json:"max_turns,omitempty"`
	// EndOnDone ends the episode when the harness declares the task done
	// (default true); when false further steps are allowed.
	EndOnDone *bool `yaml:"end_on_done" json:"end_on_done,omitempty"`
	// OutputLimit bounds what the harness may print in one turn.
	OutputLimit units.ByteSize `yaml:"output_limit" json:"output_limit"`
	// MaxTurnEvents bounds the events one turn keeps; later ones are
	// dropped and the observation says so (metadata.truncated).
	MaxTurnEvents int `yaml:"max_turn_events" json:"max_turn_events"`
	// MaxTurnEventBytes bounds the encoded bytes of the events one turn
	// keeps, likewise.
	MaxTurnEventBytes units.ByteSize `yaml:"max_turn_event_bytes" json:"max_turn_event_bytes"`
	// MaxModelCalls bounds the model calls of an episode (0: unlimited);
	// MaxTurnModelCalls those of one turn.
	MaxModelCalls     int `yaml:"max_model_calls" json:"max_model_calls,omitempty"`
	MaxTurnModelCalls int `yaml:"max_turn_model_calls" json:"max_turn_model_calls,omitempty"`
	// MaxOutputTokens bounds the completion tokens of an episode (0:
	// unlimited); MaxTurnOutputTokens those of one turn.
	MaxOutputTokens     int `yaml:"max_output_tokens" json:"max_output_tokens,omitempty"`
	MaxTurnOutputTokens int `yaml:"max_turn_output_tokens" json:"max_turn_output_tokens,omitempty"`
	// FullTokenIDs makes the gateway's llm_response events carry every
	// prompt id; by default a call extending an earlier one carries only
	// the ids after that parent's prompt+completion. A reset's
	// full_token_ids overrides it.
	FullTokenIDs bool `yaml:"full_token_ids" json:"full_token_ids,omitempty"`
	// Checkpoints is CheckpointsEveryTurn (a snapshot of the episode's
	// directories after each turn and at reset, so a fork can start at an
	// earlier turn) or CheckpointsOff (the default, also for "").
	Checkpoints string `yaml:"checkpoints" json:"checkpoints,omitempty"`
	// MaxCheckpoints bounds how many checkpoints an episode keeps (the
	// oldest are dropped); 0 means DefaultMaxCheckpoints.
	MaxCheckpoints int `yaml:"max_checkpoints" json:"max_checkpoints,omitempty"`
	// MaxCheckpointBytes bounds what an episode's checkpoints occupy on
	// the host in all (the oldest are dropped); 0 means
	// DefaultMaxCheckpointBytes.
	MaxCheckpointBytes units.ByteSize `yaml:"max_checkpoint_bytes" json:"max_checkpoint_bytes,omitempty"`
}

// Values of episode.checkpoints.
const (
	CheckpointsOff       = "off"
	CheckpointsEveryTurn = "every_turn"
)

// Defaults of the checkpoint bounds.
const (
	DefaultMaxCheckpoints     = 16
	DefaultMaxCheckpointBytes = units.ByteSize(1 << 30)
)

// CheckpointsEnabled reports episode.checkpoints: every_turn.
func (e *EpisodeConfig) CheckpointsEnabled() bool { return e.Checkpoints == CheckpointsEveryTurn }

// WorkspaceConfig shapes the per-episode working directory.
type WorkspaceConfig struct {
	// Template is copied into every fresh workspace.
	Template string `yaml:"template" json:"template,omitempty"`
	// Root holds the per-episode directories (default: $TMPDIR/harnessd).
	Root string `yaml:"root" json:"root,omitempty"`
	// Keep leaves workspaces on disk after the episode.
	Keep bool `yaml:"keep" json:"keep,omitempty"`
	// MountAt also mounts the workspace at this fixed path inside the
	// sandbox (e.g. /app, as task images expect) and makes it the
	// harness's working directory; sandbox isolation only.
	MountAt string `yaml:"mount_at" json:"mount_at,omitempty"`
	// RecordChanges writes, after each turn, the workspace paths the turn
	// changed to the record file (a bounded walk of the workspace at each
	// turn's end; needs record_dir).
	RecordChanges bool `yaml:"record_changes" json:"record_changes,omitempty"`
}

// EndsOnDone reports the effective EndOnDone.
func (e *EpisodeConfig) EndsOnDone() bool { return e.EndOnDone == nil || *e.EndOnDone }

// LoadConfig reads and validates a YAML configuration file. Relative paths
// in it are resolved against the file's directory. As ParseConfig, it
// returns the decoded configuration beside a validation error.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(b, filepath.Dir(abs))
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes YAML strictly (an unknown key is an error naming the
// key and its line), resolves relative paths against baseDir, applies
// defaults and validates. It reports every problem at once: keys that do
// not decode (unknown, or a bad value) are left unset and the rest is
// decoded and validated, every problem joined in the error. The decoded
// configuration is returned beside the error so that a validator can go on
// checking it; it is nil only when the text is not YAML at all.
func ParseConfig(data []byte, baseDir string) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cfg Config
	var decodeErr error
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		decodeErr = fmt.Errorf("config: %s", nameKeys(unknownKeys(err.Error()), data))
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, decodeErr
		}
	}
	cfg.resolvePaths(baseDir)
	zeros := errors.Join(explicitZeros(data)...)
	if err := errors.Join(decodeErr, zeros, cfg.Normalize()); err != nil {
		return &cfg, err
	}
	return &cfg, nil
}

func (c *Config) resolvePaths(base string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || base == "" {
			return p
		}
		return filepath.Join(base, p)
	}
	// A relative program path ("./agent", "bin/agent") means the file next
	// to the configuration, not one inside each episode's workspace.
	if len(c.Harness.Command) > 0 && strings.Contains(c.Harness.Command[0], "/") {
		c.Harness.Command[0] = abs(c.Harness.Command[0])
	}
	c.Workspace.Template = abs(c.Workspace.Template)
	c.Workspace.Root = abs(c.Workspace.Root)
	c.RecordDir = abs(c.RecordDir)
	c.Tasks.Dir, c.Tasks.JSONL, c.Tasks.Task, c.Tasks.Parquet = abs(c.Tasks.Dir), abs(c.Tasks.JSONL), abs(c.Tasks.Task), abs(c.Tasks.Parquet)
	for i := range c.Tools {
		t := &c.Tools[i]
		if t.Dir == "" {
			t.Dir = base
		} else {
			t.Dir = abs(t.Dir)
		}
		// A relative program ("./server", "../bin/server") is the file
		// from the server's directory: a sandbox shows that file's own
		// directory, not the one the server runs in and its parents.
		absProgramIn(t.Dir, t.Command)
		for _, s := range []*ToolServer{t.Simulation, t.Production} {
			if s == nil {
				continue
			}
			if s.Dir != "" {
				s.Dir = abs(s.Dir)
			}
			dir := s.Dir
			if dir == "" {
				dir = t.Dir
			}
			absProgramIn(dir, s.Command)
		}
	}
	if u := c.User; u != nil {
		if len(u.Command) > 0 && strings.Contains(u.Command[0], "/") {
			u.Command[0] = abs(u.Command[0])
		}
		if u.Model != nil {
			u.Model.PromptFile = abs(u.Model.PromptFile)
		}
	}
}

// absProgramIn makes command's program, a relative path, absolute from
// dir (a bare name stays one, for PATH; without dir nothing changes).
func absProgramIn(dir string, command []string) {
	if dir == "" || len(command) == 0 || !strings.Contains(command[0], "/") || filepath.IsAbs(command[0]) {
		return
	}
	command[0] = filepath.Join(dir, command[0])
}

// Normalize applies defaults and validates. Call it after building a Config
// in code (ParseConfig calls it). It is idempotent.
func (c *Config) Normalize() error {
	h := &c.Harness
	if h.Adapter == "" && h.Agent == "" {
		h.Adapter = DefaultAdapter
	}
	if h.StartupTimeout == 0 {
		h.StartupTimeout = units.Duration(DefaultStartupTimeout)
	}
	if h.StopGrace == 0 {
		h.StopGrace = units.Duration(DefaultStopGrace)
	}
	if h.MaxLineBytes == 0 {
		h.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.Episode.TurnTimeout == 0 {
		c.Episode.TurnTimeout = units.Duration(DefaultTurnTimeout)
	}
	if c.Episode.OutputLimit == 0 {
		c.Episode.OutputLimit = DefaultOutputLimit
	}
	if c.Episode.MaxTurnEvents == 0 {
		c.Episode.MaxTurnEvents = DefaultMaxTurnEvents
	}
	if c.Episode.MaxTurnEventBytes == 0 {
		c.Episode.MaxTurnEventBytes = DefaultMaxTurnEventBytes
	}
	if c.Episode.Checkpoints == "" {
		c.Episode.Checkpoints = CheckpointsOff
	}
	if c.Episode.MaxCheckpoints == 0 {
		c.Episode.MaxCheckpoints = DefaultMaxCheckpoints
	}
	if c.Episode.MaxCheckpointBytes == 0 {
		c.Episode.MaxCheckpointBytes = DefaultMaxCheckpointBytes
	}
	if c.Name == "" {
		switch {
		case h.Agent != "":
			c.Name = h.Agent
		case len(h.Command) > 0:
			c.Name = filepath.Base(h.Command[0])
		default:
			c.Name = "harness"
		}
	}
	var errs []error
	if c.Episode.MaxTurns < 0 {
		errs = append(errs, errors.New("episode.max_turns must not be negative"))
	}
	if c.Episode.MaxTurnEvents < 0 {
		errs = append(errs, errors.New("episode.max_turn_events must not be negative"))
	}
	if c.Episode.MaxTurnEventBytes < 0 {
		errs = append(errs, errors.New("episode.max_turn_event_bytes must not be negative"))
	}
	switch c.Episode.Checkpoints {
	case CheckpointsOff, CheckpointsEveryTurn:
	default:
		errs = append(errs, fmt.Errorf("episode.checkpoints %q: want %s or %s", c.Episode.Checkpoints, CheckpointsEveryTurn, CheckpointsOff))
	}
	if c.Episode.MaxCheckpoints < 0 {
		errs = append(errs, fmt.Errorf("episode.max_checkpoints %d must not be negative (0 means the default, %d)", c.Episode.MaxCheckpoints, DefaultMaxCheckpoints))
	}
	if c.Episode.MaxCheckpointBytes < 0 {
		errs = append(errs, fmt.Errorf("episode.max_checkpoint_bytes %d must not be negative (0 means the default, %s)", c.Episode.MaxCheckpointBytes, DefaultMaxCheckpointBytes))
	}
	if h.Agent == "" && len(h.Command) == 0 {
		errs = append(errs, errors.New("harness.command is required (or harness.agent naming a preset)"))
	}
	if err := c.validateMode(); err != nil {
		errs = append(errs, err)
	}
	if err := c.selectMapped(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.normalizeUser()...)
	seen := map[string]bool{}
	for i := range c.Tools {
		t := &c.Tools[i]
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("tools[%d]: name is required", i))
		} else if seen[t.Name] {
			errs = append(errs, fmt.Errorf("tools[%d]: duplicate tool server name %q", i, t.Name))
		}
		seen[t.Name] = true
		if (len(t.Command) == 0) == (t.URL == "") {
			errs = append(errs, fmt.Errorf("tools[%d] %q: exactly one of command or url is required", i, t.Name))
		}
		if t.URL != "" && !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
			errs = append(errs, fmt.Errorf("tools[%d] %q: url must be http(s)", i, t.Name))
		}
		if t.CallTimeout == 0 {
			t.CallTimeout = units.Duration(DefaultToolTimeout)
		}
		switch t.Isolation {
		case "", ToolIsolationSandbox, ToolIsolationHost:
		default:
			errs = append(errs, fmt.Errorf("tools[%d] %q: isolation must be %s or %s, not %q", i, t.Name, ToolIsolationSandbox, ToolIsolationHost, t.Isolation))
		}
		if t.URL != "" && (t.Isolation != "" || t.Network) {
			errs = append(errs, fmt.Errorf("tools[%d] %q: isolation and network apply to stdio servers (command), not url", i, t.Name))
		}
	}
	errs = append(errs, c.validateEvents()...)
	errs = append(errs, c.validateModel()...)
	errs = append(errs, c.validateIsolation()...)
	errs = append(errs, c.normalizeSandbox()...)
	if c.Warm < 0 || c.Warm > MaxWarm {
		errs = append(errs, fmt.Errorf("warm must be 0 to %d, not %d", MaxWarm, c.Warm))
	}
	if err := rubric.Validate(c.Rubrics); err != nil {
		errs = append(errs, err)
	}
	if err := c.loadTaskset(); err != nil {
		errs = append(errs, err)
	}
	if c.Workspace.Template != "" {
		if fi, err := os.Stat(c.Workspace.Template); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("workspace.template %q is not a directory", c.Workspace.Template))
		}
	}
	return errors.Join(errs...)
}

// Taskset returns the configuration's loaded taskset, nil without tasks:.
// Normalize loads it.
func (c *Config) Taskset() *tasks.Set { return c.taskset }

// loadTaskset loads and validates tasks: once per source.
func (c *Config) loadTaskset() error {
	if c.Tasks.Empty() {
		c.taskset = nil
		return nil
	}
	if c.taskset != nil && c.tasksFrom.Equal(c.Tasks) {
		return nil
	}
	set, err := tasks.Load(c.Tasks)
	if err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	c.taskset, c.tasksFrom = set, c.Tasks.Clone()
	return nil
}

// WorkspaceRoot returns the directory under which sessions of this
// configuration keep their directories (workspace.root, or the default
// $TMPDIR/harnessd).
func (c *Config) WorkspaceRoot() string {
	if c.Workspace.Root != "" {
		return c.Workspace.Root
	}
	return filepath.Join(os.TempDir(), "harnessd")
}
