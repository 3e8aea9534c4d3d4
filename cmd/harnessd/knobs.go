package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/tasks"
)

// knob binds one command-line flag to one key of the environment
// configuration. The key's Go type decides how the flag is parsed (kinds);
// the default shown in the help is the configuration's own (config.Config
// Normalize), so neither is written here.
type knob struct {
	flag  string // the flag's name, without "--"
	path  string // the configuration key it sets, as docs/configuration.md spells it
	usage string // the help text, without the default
}

// hostPathKnobs are the knobs whose value is a path on the daemon's host:
// made absolute from the working directory when given, as a configuration
// file's relative paths are from the file's directory, because the daemon
// and the sandboxes it builds use them from elsewhere. (--tasks and the
// programs of --tool and the harness command are made absolute where
// they are parsed.)
var hostPathKnobs = map[string]bool{"record-dir": true, "workspace-template": true}

// envKnobs is the one table of the flags that set the environment
// configuration (serve and run). A flag given on the command line wins over
// the file: a single value replaces the file's, a repeatable flag (a list or
// map key) adds to it. A single-valued flag given twice is an error.
func envKnobs() []knob {
	x, _ := linked() // build reports an inconsistent link
	return []knob{
		{"tasks", "tasks", "the taskset: a `directory` of Harbor task directories, or a .jsonl file (docs/tasks.md)"},
		{"name", "name", "environment name (default: the agent, else the harness program's name)"},
		{"adapter", "harness.adapter", "harness protocol: " + strings.Join(protocolAdapters(x.adapters), ", ")},
		{"agent", "harness.agent", "run a known agent (a preset; see harnessd agents): " + strings.Join(x.presets.Names(), ", ")},
		{"model-url", "harness.model.url", "the model upstream's server root; the agent is pointed at a per-episode model gateway in front of it"},
		{"model", "harness.model.name", "the model name sent upstream"},
		{"model-api-key-env", "harness.model.api_key_env", "harnessd's environment `variable` holding the upstream's API key (given to the gateway, never to the agent)"},
		{"model-upstream", "harness.model.upstream", "the upstream's `kind`: passthrough (a provider of the agent's API; default) or engine (vLLM/SGLang with token ids: training)"},
		{"tool", "tools", "tool server (repeatable): `SPEC` is stdio:COMMAND ARGS... or http:URL, optionally NAME=SPEC"},
		{"hide", "hide", "hide tools matching this `pattern` from the harness (repeatable)"},
		{"expose", "expose", "serve only tools matching this `pattern` (repeatable)"},
		{"env", "harness.env", "`NAME=VALUE` for the harness's environment (repeatable)"},
		{"pass-env", "harness.pass_env", "pass this daemon variable (or `pattern`) to the harness (repeatable)"},
		{"turn-timeout", "episode.turn_timeout", "wall-clock budget of one turn"},
		{"startup-timeout", "harness.startup_timeout", "harness start-up budget"},
		{"episode-timeout", "episode.episode_timeout", "wall-clock budget of an episode (default none)"},
		{"output-limit", "episode.output_limit", "what the harness may print in one turn"},
		{"max-turns", "episode.max_turns", "end episodes after this many turns (default unlimited)"},
		{"warm", "warm", fmt.Sprintf("keep this many next episodes of each session prepared, harness started and ready, so a reset hands one over (0 to %d; default 0)", config.MaxWarm)},
		{"record-dir", "record_dir", "write each episode's events to `DIR`/<episode>.jsonl"},
		{"workspace-template", "workspace.template", "`directory` copied into every episode's workspace"},
		{"sandbox-ro", "sandbox.read_only", "a host `path` the sandboxed harness may read (repeatable; ~ is the daemon's HOME); for what harnessd cannot find itself"},
	}
}

// kind is how the flags of one configuration type are parsed and applied.
type kind struct {
	name   string // the value's type in the help, when the usage names none
	repeat bool   // each use adds to the key instead of replacing it
	// parse checks and converts the nth use (from 1) of the flag.
	parse func(s string, n int) (any, error)
}

// kinds are the configuration types a knob can set.
var kinds = map[reflect.Type]kind{
	reflect.TypeFor[string](): {name: "string", parse: func(s string, _ int) (any, error) { return s, nil }},
	reflect.TypeFor[int](): {name: "int", parse: func(s string, _ int) (any, error) {
		return strconv.Atoi(s)
	}},
	reflect.TypeFor[units.Duration](): {name: "duration", parse: func(s string, _ int) (any, error) {
		d, err := units.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, errors.New("want a positive duration such as 90s")
		}
		return d, nil
	}},
	reflect.TypeFor[units.ByteSize](): {name: "size", parse: func(s string, _ int) (any, error) {
		b, err := units.ParseByteSize(s)
		if err != nil || b <= 0 {
			return nil, errors.New("want a positive size such as 16MiB")
		}
		return b, nil
	}},
	reflect.TypeFor[[]string](): {name: "value", repeat: true, parse: func(s string, _ int) (any, error) { return s, nil }},
	reflect.TypeFor[map[string]string](): {name: "value", repeat: true, parse: func(s string, _ int) (any, error) {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, errors.New("want NAME=VALUE")
		}
		return [2]string{k, v}, nil
	}},
	reflect.TypeFor[[]config.ToolConfig](): {name: "value", repeat: true, parse: func(s string, n int) (any, error) {
		return parseToolFlag(s, n)
	}},
	reflect.TypeFor[tasks.Source](): {name: "path", parse: func(s string, _ int) (any, error) { return taskSource(s), nil }},
}

// knobValue is a knob's flag: it keeps what the command line gave, each
// use parsed when given, until apply sets the configuration.
type knobValue struct {
	k    knob
	kind kind
	vals []any
	raw  []string // each use, as given
	last string
}

func (v *knobValue) String() string { return v.last }
func (v *knobValue) Type() string   { return v.kind.name }

// Set parses one use of the flag.
func (v *knobValue) Set(s string) error {
	if !v.kind.repeat && len(v.vals) > 0 {
		return fmt.Errorf("given more than once (it sets %s, which takes one value)", v.k.path)
	}
	if hostPathKnobs[v.k.flag] && s != "" {
		abs, err := filepath.Abs(s)
		if err != nil {
			return err
		}
		s = abs
	}
	x, err := v.kind.parse(s, len(v.vals)+1)
	if err != nil {
		return err
	}
	v.vals = append(v.vals, x)
	v.raw = append(v.raw, s)
	v.last = s
	return nil
}

// apply sets the knob's configuration key from what the command line gave;
// it does nothing when the flag was not given.
func (v *knobValue) apply(cfg *config.Config) {
	f := configField(reflect.ValueOf(cfg).Elem(), v.k.path)
	for _, x := range v.vals {
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf(x)))
		case reflect.Map:
			if f.IsNil() {
				f.Set(reflect.MakeMap(f.Type()))
			}
			kv := x.([2]string)
			f.SetMapIndex(reflect.ValueOf(kv[0]), reflect.ValueOf(kv[1]))
		default:
			f.Set(reflect.ValueOf(x))
		}
	}
}

// knobSet is the knobs registered on one flag set.
type knobSet []*knobValue

// registerKnobs adds every knob of ks to fs, each with its configuration
// default in the help. It panics on a knob whose path is not a key of the
// configuration or whose type has no kind: the table is wrong.
func registerKnobs(fs *pflag.FlagSet, ks []knob) knobSet {
	defaults := defaultConfig()
	var out knobSet
	for _, k := range ks {
		f := configField(reflect.ValueOf(defaults).Elem(), k.path)
		if !f.IsValid() {
			panic(fmt.Sprintf("knob --%s: %q is not a configuration key", k.flag, k.path))
		}
		kd, ok := kinds[f.Type()]
		if !ok {
			panic(fmt.Sprintf("knob --%s: configuration key %s has type %s, which no flag kind parses", k.flag, k.path, f.Type()))
		}
		v := &knobValue{k: k, kind: kd}
		fs.Var(v, k.flag, k.usage)
		fs.Lookup(k.flag).DefValue = defaultText(f)
		out = append(out, v)
	}
	return out
}

// apply sets the configuration keys of every flag given.
func (ks knobSet) apply(cfg *config.Config) {
	for _, v := range ks {
		v.apply(cfg)
	}
}

// nameFlags names the flag beside the configuration key a problem of err
// begins with, when a flag given on the command line set that key:
// "episode.max_turns (--max-turns) must not be negative", "tools[0]
// (--tool) ...". The configuration reports keys; an operator who typed a
// flag looks for the flag. Problems already naming it are left alone.
func (ks knobSet) nameFlags(err error) error {
	var ps problems
	if errors.As(err, &ps) {
		out := make(problems, len(ps))
		for i, p := range ps {
			out[i] = ks.nameFlags(p)
		}
		return out
	}
	text := err.Error()
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		lines[i] = ks.nameFlag(line)
	}
	if named := strings.Join(lines, "\n"); named != text {
		return &flagNamed{text: named, err: err}
	}
	return err
}

// nameFlag is line with the flag named after its leading key (nameFlags),
// which may follow setup's "refusing to start: ".
func (ks knobSet) nameFlag(line string) string {
	const refusing = "refusing to start: "
	if rest, ok := strings.CutPrefix(line, refusing); ok {
		return refusing + ks.nameFlag(rest)
	}
	var best *knobValue
	for _, v := range ks {
		p := v.k.path
		if len(v.vals) == 0 || !strings.HasPrefix(line, p) || (best != nil && len(best.k.path) >= len(p)) {
			continue
		}
		// The key ends there or goes on into an element ("tools[0]");
		// "harness.model.url" is not a key "harness.model".
		if rest := line[len(p):]; rest == "" || strings.ContainsRune(" :[", rune(rest[0])) {
			best = v
		}
	}
	if best == nil || strings.Contains(line, "--"+best.k.flag) {
		return line
	}
	end := strings.IndexAny(line, " :")
	if end < 0 {
		end = len(line)
	}
	return line[:end] + " (--" + best.k.flag + ")" + line[end:]
}

// flagNamed is an error whose text nameFlags rewrote.
type flagNamed struct {
	text string
	err  error
}

func (e *flagNamed) Error() string { return e.text }
func (e *flagNamed) Unwrap() error { return e.err }

// defaultConfig is the configuration with nothing set but a harness
// command (and the name, which would default to the command's), as
// Normalize completes it: its values are the defaults the help shows.
func defaultConfig() *config.Config {
	cfg := &config.Config{Name: "-", Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"-"}}}}
	_ = cfg.Normalize() // the defaults are filled whatever is invalid
	cfg.Name, cfg.Harness.Command = "", nil
	return cfg
}

// defaultText is a default for the help: "" (none shown) for a zero value.
func defaultText(f reflect.Value) string {
	if f.IsZero() {
		return ""
	}
	switch d := f.Interface().(type) {
	case units.Duration:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	case fmt.Stringer:
		return d.String()
	}
	return fmt.Sprint(f.Interface())
}

// configField is the field of the configuration (or a section of it) that
// the dotted YAML key path names; it is invalid when there is none.
func configField(v reflect.Value, path string) reflect.Value {
	for name := range strings.SplitSeq(path, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		if v = yamlField(v, name); !v.IsValid() {
			return v
		}
	}
	return v
}

// yamlField is the field of struct v whose YAML key is name, looking into
// inline fields.
func yamlField(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		key, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if opts == "inline" {
			if f := yamlField(v.Field(i), name); f.IsValid() {
				return f
			}
			continue
		}
		if key == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// agentsDirUsage is the help of --agents-dir (agents.ApplyOptions, not a
// configuration key).
var agentsDirUsage = "where agent programs are installed: a node_modules/.bin `directory` or one holding it\n(searched before PATH; default $" + agents.DirEnvVar + ")"
