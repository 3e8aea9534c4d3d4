package main

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// parseEnv registers the environment flags on a fresh flag set and parses
// args.
func parseEnv(t *testing.T, args ...string) (*envFlags, error) {
	t.Helper()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var e envFlags
	e.register(fs)
	return &e, fs.Parse(args)
}

// Every knob names a key of the configuration whose type a flag kind
// parses (registerKnobs panics otherwise), and docs/configuration.md's
// flag table lists each, with its key.
func TestEveryKnobIsAConfigurationKeyAndDocumented(t *testing.T) {
	if _, err := parseEnv(t); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range envKnobs() {
		row := "| `--" + k.flag + "` | `" + k.path + "` |"
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/configuration.md lacks the row %q", row)
		}
	}
}

// Flags win over the file: a single value replaces the file's, a
// repeatable flag adds to the file's list or map; keys no flag names keep
// the file's value.
func TestFlagsWinOverTheFile(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "env.yaml", `
name: from-file
harness:
  command: [sh]
  env: {A: "1"}
  pass_env: [HOME]
episode: {turn_timeout: 5s, max_turns: 3, output_limit: 1MiB}
hide: [a]
`)
	e, err := parseEnv(t, "--config", cfg, "--name", "from-flag", "--turn-timeout", "7s", "--hide", "b", "--hide", "c",
		"--env", "B=2", "--pass-env", "LANG", "--warm", "0", "--tool", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "from-flag" || c.Episode.TurnTimeout.D() != 7*time.Second || c.Episode.MaxTurns != 3 || c.Episode.OutputLimit != 1<<20 {
		t.Errorf("name %q, turn_timeout %v, max_turns %d, output_limit %v", c.Name, c.Episode.TurnTimeout, c.Episode.MaxTurns, c.Episode.OutputLimit)
	}
	if strings.Join(c.Hide, ",") != "a,b,c" || strings.Join(c.Harness.PassEnv, ",") != "HOME,LANG" {
		t.Errorf("hide %v, pass_env %v", c.Hide, c.Harness.PassEnv)
	}
	if c.Harness.Env["A"] != "1" || c.Harness.Env["B"] != "2" {
		t.Errorf("env %v", c.Harness.Env)
	}
	if len(c.Tools) != 1 || c.Tools[0].Name != "tools1" || c.Tools[0].URL != "http://127.0.0.1:1/mcp" {
		t.Errorf("tools %+v", c.Tools)
	}
}

// The help shows each knob's default as the configuration decides it, and
// nothing twice.
func TestKnobHelpShowsTheConfigurationDefaults(t *testing.T) {
	out, _, _ := harnessd(t, nil, "serve", "--help")
	for _, w := range []string{"one turn (default 600s)", "start-up budget (default 30s)", "in one turn (default 16MiB)", `(default "jsonl")`} {
		if !strings.Contains(out, w) {
			t.Errorf("serve --help lacks %q", w)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Count(l, "default") > 1 {
			t.Errorf("a default twice: %q", l)
		}
	}
	// run's help says what run does with a taskset, not serve's words.
	out, _, _ = harnessd(t, nil, "run", "--help")
	if strings.Contains(out, "serve a taskset") || !strings.Contains(out, "--tasks directory") {
		t.Errorf("run --help on --tasks:\n%s", out)
	}
}

// A single-valued flag given twice is a usage error naming it (it used to
// keep the last one silently: --tasks A --tasks B served only B).
func TestSingleValuedFlagTwiceIsAnError(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--tasks", dir, "--tasks", dir},
		{"--turn-timeout", "5s", "--turn-timeout", "6s"},
	} {
		_, err := parseEnv(t, args...)
		if err == nil || !strings.Contains(err.Error(), args[0]) || !strings.Contains(err.Error(), "more than once") {
			t.Errorf("%v: %v", args, err)
		}
	}
	_, errOut, code := harnessd(t, nil, "run", "--tasks", dir, "--tasks", dir, "--", "true")
	if code != exitUsage || !strings.Contains(errOut, `"--tasks" flag: given more than once`) {
		t.Errorf("run --tasks twice: exit %d, stderr %q", code, errOut)
	}
}

// A problem with a key a flag set names the flag beside the key; one a
// configuration file set (the flag not given) is left as it was, as is a
// longer key that only begins with a knob's (harness.model.url is not
// harness.model's) and a line that names the flag already.
func TestProblemsNameTheFlagThatSetTheirKey(t *testing.T) {
	e, err := parseEnv(t, "--max-turns", "-3", "--tool", "stdio:/x", "--model", "m")
	if err != nil {
		t.Fatal(err)
	}
	in := problems{
		errors.New("episode.max_turns must not be negative"),
		errors.New("refusing to start: tools[0].command (tool server \"tools1\"): program /x does not exist"),
		errors.New("warm must be 0 to 8, not 99"),                   // --warm not given
		errors.New("harness.model.name_extra is not a key"),         // not the key harness.model.name
		errors.New("harness.model.name (--model) \"m\" is unknown"), // names it already
	}
	want := []string{
		"episode.max_turns (--max-turns) must not be negative",
		"refusing to start: tools[0].command (--tool) (tool server \"tools1\"): program /x does not exist",
		"warm must be 0 to 8, not 99",
		"harness.model.name_extra is not a key",
		"harness.model.name (--model) \"m\" is unknown",
	}
	var got problems
	if !errors.As(e.knobs.nameFlags(in), &got) || len(got) != len(want) {
		t.Fatalf("nameFlags gave %v", got)
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("got %q, want %q", got[i], want[i])
		}
	}
	// A single error (not problems) of several lines keeps what it wraps.
	base := errors.New("episode.max_turns must not be negative\nsecond line")
	named := e.knobs.nameFlags(base)
	if named.Error() != "episode.max_turns (--max-turns) must not be negative\nsecond line" || !errors.Is(named, base) {
		t.Errorf("got %q (wraps the original: %v)", named, errors.Is(named, base))
	}
}
