package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/internal/units"
)

// listFlag collects a repeatable flag; each use adds one value (commas are
// not separators: a tool command may hold them).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Type names the value in the help when the usage has no `NAME`.
func (l *listFlag) Type() string { return "value" }

// envFlags describe the environment on the command line; they override a
// configuration file.
type envFlags struct {
	config         string
	name           string
	adapter        string
	tools          listFlag
	hide           listFlag
	expose         listFlag
	env            listFlag
	passEnv        listFlag
	turnTimeout    string
	startupTimeout string
	episodeTimeout string
	warm           int
	outputLimit    string
	maxTurns       int
	recordDir      string
	template       string
	agent          string
	agentsDir      string
	modelURL       string
	modelName      string
	modelKeyEnv    string
	modelUpstream  string
	tasks          string
}

func (e *envFlags) register(fs *pflag.FlagSet) {
	x, _ := linked() // build reports an inconsistent link
	fs.StringVar(&e.config, "config", "", "environment configuration `file` (YAML)")
	fs.StringVar(&e.tasks, "tasks", "", "serve a taskset: a `directory` of Harbor task directories, or a .jsonl file (docs/tasks.md)")
	fs.StringVar(&e.name, "name", "", "environment name")
	fs.StringVar(&e.adapter, "adapter", "", "harness protocol: "+strings.Join(protocolAdapters(x.adapters), ", "))
	fs.StringVar(&e.agent, "agent", "", "run a known agent (a preset; see harnessd agents): "+strings.Join(x.presets.Names(), ", "))
	fs.StringVar(&e.agentsDir, "agents-dir", "", "where agent programs are installed: a node_modules/.bin directory or one holding it\n(searched before PATH; default $"+agents.DirEnvVar+")")
	fs.StringVar(&e.modelURL, "model-url", "", "the model upstream's server root; the agent is pointed at a per-episode model gateway in front of it")
	fs.StringVar(&e.modelName, "model", "", "the model name sent upstream")
	fs.StringVar(&e.modelKeyEnv, "model-api-key-env", "", "harnessd's environment `variable` holding the upstream's API key (given to the gateway, never to the agent)")
	fs.StringVar(&e.modelUpstream, "model-upstream", "", "the upstream's `kind`: passthrough (a provider of the agent's API; default) or engine (vLLM/SGLang with token ids: training)")
	fs.Var(&e.tools, "tool", "tool server (repeatable): `SPEC` is stdio:COMMAND ARGS... or http:URL, optionally NAME=SPEC")
	fs.Var(&e.hide, "hide", "hide tools matching this `pattern` from the harness (repeatable)")
	fs.Var(&e.expose, "expose", "serve only tools matching this `pattern` (repeatable)")
	fs.Var(&e.env, "env", "`NAME=VALUE` for the harness's environment (repeatable)")
	fs.Var(&e.passEnv, "pass-env", "pass this daemon variable (or `pattern`) to the harness (repeatable)")
	durationVar(fs, &e.turnTimeout, "turn-timeout", "", "wall-clock budget of one turn (episode.turn_timeout; default 600s)")
	durationVar(fs, &e.startupTimeout, "startup-timeout", "", "harness start-up budget (harness.startup_timeout; default 30s)")
	durationVar(fs, &e.episodeTimeout, "episode-timeout", "", "wall-clock budget of an episode (episode.episode_timeout; default none)")
	sizeVar(fs, &e.outputLimit, "output-limit", "", "what the harness may print in one turn (episode.output_limit; default 16MiB)")
	fs.IntVar(&e.maxTurns, "max-turns", 0, "end episodes after this many turns (default unlimited)")
	fs.IntVar(&e.warm, "warm", -1, "keep this many next episodes of each session prepared, harness started and ready, so a reset hands one over (warm; default 0)")
	fs.StringVar(&e.recordDir, "record-dir", "", "write each episode's events to `DIR`/<episode>.jsonl")
	fs.StringVar(&e.template, "workspace-template", "", "`directory` copied into every episode's workspace")
}

// build assembles the configuration: the file (if any), then flags, then
// the command after "--" (a jsonl harness unless an adapter is given).
func (e *envFlags) build(command []string) (*config.Config, error) {
	cfg := &config.Config{}
	if e.config != "" {
		c, err := config.LoadConfig(e.config)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	if len(command) > 0 {
		command = append([]string(nil), command...)
		if strings.Contains(command[0], "/") && !filepath.IsAbs(command[0]) {
			if abs, err := filepath.Abs(command[0]); err == nil {
				command[0] = abs
			}
		}
		cfg.Harness.Command = command
	}
	if e.name != "" {
		cfg.Name = e.name
	}
	if e.adapter != "" {
		cfg.Harness.Adapter = e.adapter
	}
	if e.agent != "" {
		cfg.Harness.Agent = e.agent
	}
	if e.modelURL != "" {
		cfg.Harness.Model.URL = e.modelURL
	}
	if e.modelName != "" {
		cfg.Harness.Model.Name = e.modelName
	}
	if e.modelKeyEnv != "" {
		cfg.Harness.Model.APIKeyEnv = e.modelKeyEnv
	}
	if e.modelUpstream != "" {
		cfg.Harness.Model.Upstream = e.modelUpstream
	}
	for i, t := range e.tools {
		tc, err := parseToolFlag(t, i+1)
		if err != nil {
			return nil, err
		}
		cfg.Tools = append(cfg.Tools, tc)
	}
	cfg.Hide = append(cfg.Hide, e.hide...)
	cfg.Expose = append(cfg.Expose, e.expose...)
	for _, kv := range e.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want NAME=VALUE", kv)
		}
		if cfg.Harness.Env == nil {
			cfg.Harness.Env = map[string]string{}
		}
		cfg.Harness.Env[k] = v
	}
	cfg.Harness.PassEnv = append(cfg.Harness.PassEnv, e.passEnv...)
	for _, d := range []struct {
		flag, val string
		dst       *units.Duration
	}{
		{"--turn-timeout", e.turnTimeout, &cfg.Episode.TurnTimeout},
		{"--startup-timeout", e.startupTimeout, &cfg.Harness.StartupTimeout},
		{"--episode-timeout", e.episodeTimeout, &cfg.Episode.EpisodeTimeout},
	} {
		if d.val == "" {
			continue
		}
		v, err := units.ParseDuration(d.val)
		if err != nil || v == 0 {
			return nil, fmt.Errorf("%s %q: want a positive duration such as 90s", d.flag, d.val)
		}
		*d.dst = v
	}
	if e.outputLimit != "" {
		v, err := units.ParseByteSize(e.outputLimit)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--output-limit %q: want a positive size such as 16MiB", e.outputLimit)
		}
		cfg.Episode.OutputLimit = v
	}
	if e.warm >= 0 {
		cfg.Warm = e.warm
	}
	if e.maxTurns > 0 {
		cfg.Episode.MaxTurns = e.maxTurns
	}
	if e.recordDir != "" {
		cfg.RecordDir = e.recordDir
	}
	if e.template != "" {
		cfg.Workspace.Template = e.template
	}
	if e.tasks != "" {
		cfg.Tasks = taskSource(e.tasks)
	}
	if e.config == "" && len(cfg.Harness.Command) == 0 && cfg.Harness.Agent == "" {
		return nil, errors.New("no harness: give --config FILE, --agent NAME, or the harness command after --")
	}
	x, err := linked()
	if err != nil {
		return nil, err
	}
	if err := applyPreset(x.presets, cfg, agents.ApplyOptions{Dir: e.agentsDir}); err != nil {
		return nil, err
	}
	if cfg.RecordDir != "" {
		if err := os.MkdirAll(cfg.RecordDir, 0o755); err != nil {
			return nil, err
		}
	}
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	if _, err := x.adapters.New(&cfg.Harness.Config); err != nil {
		return nil, err
	}
	return cfg, nil
}

// protocolAdapters lists the adapters of r other than the presets'
// wrapping ones (those are chosen with --agent).
func protocolAdapters(r *harness.Registry) []string {
	var out []string
	for _, n := range r.Names() {
		if !strings.HasPrefix(n, agents.AdapterPrefix) {
			out = append(out, n)
		}
	}
	return out
}

// parseToolFlag reads [NAME=]stdio:COMMAND ARGS... or [NAME=]http:URL.
func parseToolFlag(s string, n int) (config.ToolConfig, error) {
	tc := config.ToolConfig{Name: fmt.Sprintf("tools%d", n)}
	if i := strings.IndexByte(s, '='); i > 0 && !strings.ContainsAny(s[:i], ": ") {
		tc.Name, s = s[:i], s[i+1:]
	}
	switch {
	case strings.HasPrefix(s, "stdio:"):
		args, err := splitArgs(strings.TrimPrefix(s, "stdio:"))
		if err != nil {
			return tc, fmt.Errorf("--tool %q: %w", s, err)
		}
		if len(args) == 0 {
			return tc, fmt.Errorf("--tool %q: no command", s)
		}
		tc.Command = args
		if wd, err := os.Getwd(); err == nil {
			tc.Dir = wd
		}
	case strings.HasPrefix(s, "http:http://"), strings.HasPrefix(s, "http:https://"):
		tc.URL = s[len("http:"):]
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"):
		tc.URL = s
	default:
		return tc, fmt.Errorf("--tool %q: want stdio:COMMAND ARGS or http:URL", s)
	}
	return tc, nil
}

// splitArgs splits a command line on spaces, honouring single and double
// quotes and backslash escapes (no other shell syntax).
func splitArgs(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inArg, quote := false, rune(0)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' && i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			inArg = true
		case r == ' ' || r == '\t' || r == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}
