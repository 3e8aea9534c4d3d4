package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/beneath"
)

// AdapterPrefix prefixes the names of the wrapping adapters that presets
// register: preset "gemini" is adapter "agent:gemini".
const AdapterPrefix = "agent:"

// PlaceholderKey is the API key agents get when a Launch has a model URL
// but no gateway key (a Launch not made by a session): most agents refuse
// to start without some key. Sessions always give the gateway's key.
const PlaceholderKey = "harnessd-placeholder-key"

// providerID names the model provider presets configure in agents that
// take a provider table (OpenCode, Codex).
const providerID = "harnessd"

// Preset describes one known agent. Presets are read-only once added to a
// Catalog.
type Preset struct {
	// Name is the preset's name (harness.agent, --agent).
	Name string
	// Title is the agent's product name.
	Title string
	// Adapter is the harness protocol the agent is driven with: acp or
	// claude (stream-json).
	Adapter string
	// Program is the executable Locate looks for.
	Program string
	// Args follow the program on the command line: the protocol's entry
	// point and the flags for unattended running.
	Args []string
	// Options are the adapter's harness.options; a key the configuration
	// sets wins.
	Options map[string]any
	// Package is the npm package that provides Program ("" when the agent
	// is not on npm).
	Package string
	// Version is the version the preset was verified with.
	Version string
	// Verified says the preset passes the real-agent tests in
	// integration/agents at Version.
	Verified bool
	// BuiltinTools are the agent's own tool names (harness.builtin_tools),
	// so that environment tools with these names are served renamed.
	BuiltinTools []string
	// DefaultModel is the model name used when model.url is set without
	// model.name, for agents that cannot start without one.
	DefaultModel string
	// Dialect is the model API the agent speaks (openai-chat,
	// openai-responses, anthropic or gemini): a passthrough upstream's
	// dialect when the configuration names none.
	Dialect string
	// ToolPrefix is how the agent names the bridge's tools to the model,
	// with S for the MCP server name (e.g. "mcp__S__"): for documentation.
	ToolPrefix string
	// Fork is how the agent's own state reaches a forked sibling when the
	// preset builds it: harness.ForkResume (the agent's resume, through the
	// inner adapter's harness.Forker). Empty when only replay can fork the
	// agent (harness.ForkReplay, which the session drives for any harness).
	Fork string
	// ForkNote says what the agent offers to fork with and whether it is
	// built and verified at Version.
	ForkNote string
	// Resume, when set, prepares a forked sibling's episode (whose HOME is
	// a copy of the parent's) before the agent starts from state: for
	// agents that keep sessions per working directory, it puts the
	// parent's session where the agent looks for it from the sibling's
	// working directory. It runs after Setup, in the daemon.
	Resume func(e *Episode, state *harness.ForkState) error
	// ForkSettle, when set, waits (bounded, or until ctx ends) until the
	// agent of episode e has written the session of state down, the turn
	// whose message was last included, before a fork copies its HOME:
	// agents write their session files behind their answers.
	ForkSettle func(ctx context.Context, e *Episode, state *harness.ForkState, last string) error
	// Setup prepares one episode: settings files under the private HOME,
	// environment variables and extra arguments. It runs before the
	// agent starts, in the daemon.
	Setup func(e *Episode) error
}

// Command is the preset's command line with program as its first element.
func (p *Preset) Command(program string) []string {
	return append([]string{program}, p.Args...)
}

// AdapterName is the name of the preset's wrapping adapter (see Factory).
func (p *Preset) AdapterName() string { return AdapterPrefix + p.Name }

// Model is an episode's LLM endpoint as presets use it.
type Model struct {
	// Root is the episode's model gateway's server root (no trailing "/"
	// or "/v1"), which Anthropic and Gemini clients append their paths to.
	// Empty without a gateway: the agent keeps its own endpoint.
	Root string
	// Name is model.name, or the preset's DefaultModel when Root is set.
	Name string
	// Key is the API key the agent presents: the episode's model gateway
	// key (Launch.Model.Key), or PlaceholderKey when Root is set without one.
	// Empty otherwise. It is never the real key, which stays in the daemon.
	Key string
}

// OpenAIBase is the base URL of an OpenAI-compatible API: Root + "/v1".
func (m Model) OpenAIBase() string { return m.Root + "/v1" }

// Custom reports a configured endpoint.
func (m Model) Custom() bool { return m.Root != "" }

// Episode is what Preset.Setup prepares for one episode.
type Episode struct {
	// Home is the episode's private HOME; everything Setup writes goes
	// under it.
	Home string
	// Workspace is the episode's working directory.
	Workspace string
	// Dir is the agent's working directory as the agent sees it
	// (Launch.Dir: the workspace, or where a sandbox mounts it).
	Dir string
	// Model is the LLM endpoint.
	Model Model
	// MCP is the tool injection (nil without tools). The inner adapter
	// injects it; Setup needs it only for agents that also want it in a
	// settings file.
	MCP *harness.MCPInjection
	// Root reports that the daemon runs as root (unattended flags of some
	// agents refuse root unless told they run in a sandbox).
	Root bool

	env  map[string]string
	args []string
}

// Setenv sets a variable of the agent's environment (unless the
// configuration sets it).
func (e *Episode) Setenv(name, value string) {
	if e.env == nil {
		e.env = map[string]string{}
	}
	e.env[name] = value
}

// Getenv returns a variable Setup set.
func (e *Episode) Getenv(name string) (string, bool) {
	v, ok := e.env[name]
	return v, ok
}

// AddArgs appends arguments to the agent's command line.
func (e *Episode) AddArgs(args ...string) { e.args = append(e.args, args...) }

// Args returns the arguments Setup added.
func (e *Episode) Args() []string { return append([]string(nil), e.args...) }

// Env returns the variables Setup set, sorted as NAME=VALUE.
func (e *Episode) Env() []string {
	out := make([]string, 0, len(e.env))
	for k, v := range e.env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Path returns a path under Home.
func (e *Episode) Path(elem ...string) string {
	return filepath.Join(append([]string{e.Home}, elem...)...)
}

// MkdirAll creates a directory under Home (mode 0700). Like every write
// of the daemon in an episode's HOME (which the harness shapes, links
// included, and a fork copies) it stays beneath Home: no link leads out.
func (e *Episode) MkdirAll(rel string) error {
	p, err := e.under(rel)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(e.Home)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(p, 0o700); err != nil {
		return fmt.Errorf("make %s: %w", rel, err)
	}
	return nil
}

// WriteFile writes a file under Home with mode 0600, creating its
// directories with mode 0700, beneath Home (beneath.Dir): a link on the
// way out of Home, or at the file, or a file that is not a regular one,
// is an error, and nothing outside Home is written.
func (e *Episode) WriteFile(rel string, data []byte) error {
	p, err := e.under(rel)
	if err != nil {
		return err
	}
	if err := e.home().WriteFile(p, data); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// home is the episode's HOME as a directory the harness shapes.
func (e *Episode) home() beneath.Dir { return beneath.Dir{Path: e.Home} }

// WriteJSON writes v as indented JSON under Home (see WriteFile).
func (e *Episode) WriteJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return e.WriteFile(rel, append(b, '\n'))
}

func (e *Episode) under(rel string) (string, error) {
	if e.Home == "" {
		return "", fmt.Errorf("%s: the episode has no private HOME", rel)
	}
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: not a path inside the episode's HOME", rel)
	}
	return filepath.Clean(rel), nil
}

// Catalog is a set of presets by name: the agents harness.agent and
// --agent can name. A program builds one with the presets it links. The
// zero value is an empty catalog ready to use; a Catalog is safe for
// concurrent use and must not be copied after first use.
type Catalog struct {
	mu sync.RWMutex
	m  map[string]*Preset
}

// Add adds a preset. A preset without a name, an adapter or a program, or
// with a name already added, is an error. Presets are read-only once added.
func (c *Catalog) Add(p *Preset) error {
	if p == nil || p.Name == "" || p.Adapter == "" || p.Program == "" {
		return errors.New("agents: a preset needs a name, an adapter and a program")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.m[p.Name]; dup {
		return fmt.Errorf("agents: preset %q added twice", p.Name)
	}
	if c.m == nil {
		c.m = map[string]*Preset{}
	}
	c.m[p.Name] = p
	return nil
}

// Lookup returns the named preset.
func (c *Catalog) Lookup(name string) (*Preset, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.m[name]
	return p, ok
}

// All returns every preset, sorted by name.
func (c *Catalog) All() []*Preset {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Preset, 0, len(c.m))
	for _, p := range c.m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the preset names, sorted.
func (c *Catalog) Names() []string {
	var names []string
	for _, p := range c.All() {
		names = append(names, p.Name)
	}
	return names
}
