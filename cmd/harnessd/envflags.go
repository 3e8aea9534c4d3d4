package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/agents"
)

// listFlag collects a repeatable flag; each use adds one value (commas are
// not separators: a message may hold them).
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Type names the value in the help when the usage has no `NAME`.
func (l *listFlag) Type() string { return "value" }

// envFlags describe the environment on the command line: the
// configuration file, then the knobs (knobs.go), which win over it.
type envFlags struct {
	config    string
	agentsDir string
	knobs     knobSet
	// omit are knobs a command registers its own way (eval's repeatable
	// --tasks and --agent).
	omit []string
}

func (e *envFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.config, "config", "", "environment configuration `file` (YAML)")
	fs.StringVar(&e.agentsDir, "agents-dir", "", agentsDirUsage)
	ks := envKnobs()
	ks = slices.DeleteFunc(ks, func(k knob) bool { return slices.Contains(e.omit, k.flag) })
	e.knobs = registerKnobs(fs, ks)
}

// build assembles the configuration: the file (if any), the command after
// "--" (a jsonl harness unless an adapter is given), then the flags; the
// agent preset and the defaults complete it.
func (e *envFlags) build(command []string) (*config.Config, error) {
	return e.buildAgent("", command)
}

// buildAgent is build for the agent preset named preset (when not ""),
// which wins over the file's and the flags'.
func (e *envFlags) buildAgent(preset string, command []string) (*config.Config, error) {
	cfg := &config.Config{}
	if e.config != "" {
		if _, err := os.Stat(e.config); err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		c, err := config.LoadConfig(e.config)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	if len(command) > 0 {
		cfg.Harness.Command = absProgram(command)
	}
	e.knobs.apply(cfg)
	if preset != "" {
		cfg.Harness.Agent = preset
	}
	if e.config == "" && len(cfg.Harness.Command) == 0 && cfg.Harness.Agent == "" {
		return nil, errors.New("no harness: give --config FILE, --agent NAME, or the harness command after --")
	}
	if err := e.complete(cfg); err != nil {
		return nil, e.knobs.nameFlags(err)
	}
	return cfg, nil
}

// complete applies the agent preset, creates the record directory,
// normalises cfg and checks that its adapter can be built.
func (e *envFlags) complete(cfg *config.Config) error {
	x, err := linked()
	if err != nil {
		return err
	}
	if err := applyPreset(x.presets, cfg, agents.ApplyOptions{Dir: e.agentsDir}); err != nil {
		return err
	}
	if cfg.RecordDir != "" {
		if err := os.MkdirAll(cfg.RecordDir, 0o755); err != nil {
			return fmt.Errorf("record_dir: %w", err)
		}
	}
	if err := cfg.Normalize(); err != nil {
		return err
	}
	return buildAdapter(x.adapters, &cfg.Harness.Config)
}

// absProgram copies command, its program made absolute when it is a
// relative path ("./harness"): episodes run in their own workspace.
func absProgram(command []string) []string {
	command = append([]string(nil), command...)
	if strings.Contains(command[0], "/") && !filepath.IsAbs(command[0]) {
		if abs, err := filepath.Abs(command[0]); err == nil {
			command[0] = abs
		}
	}
	return command
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
		// A relative program is the file from the working directory,
		// as a configuration file's is from the file's: the server's
		// sandbox shows that file's own directory, not only the one the
		// server runs in.
		tc.Command = absProgram(args)
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
