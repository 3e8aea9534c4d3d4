package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte("harness:\n  command: [my-agent, --flag]\n"), "/base")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "my-agent" || cfg.Harness.Adapter != "jsonl" {
		t.Fatalf("name/adapter: %q %q", cfg.Name, cfg.Harness.Adapter)
	}
	if cfg.Episode.TurnTimeout.D() != 600*time.Second || cfg.Harness.StartupTimeout.D() != 30*time.Second ||
		cfg.Harness.StopGrace.D() != 5*time.Second || cfg.Episode.OutputLimit != DefaultOutputLimit || !cfg.Episode.EndsOnDone() {
		t.Fatalf("defaults: %+v", cfg)
	}
	if cfg.Episode.MaxTurnEvents != DefaultMaxTurnEvents || cfg.Episode.MaxTurnEventBytes != DefaultMaxTurnEventBytes {
		t.Fatalf("turn bounds: %d events, %d bytes", cfg.Episode.MaxTurnEvents, cfg.Episode.MaxTurnEventBytes)
	}
	cfg, err = ParseConfig([]byte("harness: {command: [a]}\nepisode: {max_turn_events: 10, max_turn_event_bytes: 1MiB}\n"), "")
	if err != nil || cfg.Episode.MaxTurnEvents != 10 || cfg.Episode.MaxTurnEventBytes != 1<<20 {
		t.Fatalf("turn bounds set: %v %+v", err, cfg.Episode)
	}
}

func TestParseConfigFull(t *testing.T) {
	y := `
name: calc
harness:
  command: [agent]
  env: {A: "1"}
  startup_timeout: 2.5
  options: {permission: deny}
tools:
  - name: db
    command: [python3, tools.py]
    call_timeout: 5s
  - name: remote
    url: http://127.0.0.1:9/mcp
    headers: {X-Key: k}
hide: ["grade*"]
rubrics:
  - {name: r, type: match, contains: ok, on: done, weight: 2}
episode: {turn_timeout: 90s, max_turns: 3, end_on_done: false, output_limit: 1MiB}
record_dir: records
`
	cfg, err := ParseConfig([]byte(y), "/base")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools[0].Dir != "/base" || cfg.RecordDir != "/base/records" || cfg.Tools[0].CallTimeout.D() != 5*time.Second ||
		cfg.Tools[1].CallTimeout.D() != DefaultToolTimeout {
		t.Fatalf("tools/paths: %+v %q", cfg.Tools, cfg.RecordDir)
	}
	if cfg.Harness.StartupTimeout.D() != 2500*time.Millisecond || cfg.Episode.MaxTurns != 3 || cfg.Episode.EndsOnDone() ||
		cfg.Episode.OutputLimit != 1<<20 || cfg.Harness.Options["permission"] != "deny" {
		t.Fatalf("episode: %+v", cfg)
	}
	if _, err := json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := map[string]string{
		"harness:\n  command: [a]\n  comand: [b]\n":                  "line 3: unknown key comand",
		"harness:\n  command: [a]\nepisode:\n  turn_timeout: soon\n": "invalid duration",
		"name: x\n": "harness.command is required",
		"harness: {command: [a]}\ntools:\n  - name: t\n":                                                "exactly one of command or url",
		"harness: {command: [a]}\ntools:\n  - {name: t, url: ftp://x}\n":                                "url must be http",
		"harness: {command: [a]}\ntools:\n  - {name: t, url: http://x}\n  - {name: t, url: http://y}\n": "duplicate tool server name",
		"harness: {command: [a]}\nrubrics:\n  - {type: match}\n":                                        "exactly one of pattern or contains",
		"harness: {command: [a]}\nworkspace: {template: /nonexistent/seed}\n":                           "not a directory",
		"harness: {command: [a]}\nepisode: {max_turns: -1}\n":                                           "max_turns must not be negative",
		"harness: {command: [a]}\nisolation: jail\n":                                                    "isolation must be sandbox or process",
		"harness: {command: [a]}\nisolation: process\nlimits: {pids: 64}\n":                             "limits need isolation: sandbox",
		"harness: {command: [a]}\nlimits: {pids: 3}\n":                                                  "leaves no room",
		"harness: {command: [a]}\nlimits: {memory: 1KiB}\n":                                             "too small",
		"harness: {command: [a]}\nnetwork: {allow: [pypi.org]}\n":                                       "network.allow needs network.egress: allow",
		"harness: {command: [a]}\nnetwork: {egress: allow}\n":                                           "needs hosts in network.allow",
		"harness: {command: [a]}\nnetwork: {egress: allow, allow: [127.0.0.1]}\n":                       "never allowed",
		"harness: {command: [a]}\nnetwork: {egress: wide}\n":                                            "network.egress must be",
		"harness: {command: [a], model: {timeout: 5m}}\n":                                               "harness.model.timeout needs harness.model.url",
		"harness: {command: [a]}\nnetwork: {allow_private: true}\n":                                     "network.allow_private needs network.egress: allow",
		"harness: {command: [a]}\nnetwork: {egress: allow, allow: [\"10.0.0.5:8080\"]}\n":               "10.0.0.5 is a private address, which the egress proxy refuses unless network.allow_private: true",
		"harness: {command: [a]}\nworkspace: {mount_at: app}\n":                                         "mount_at must be an absolute path",
		"harness: {command: [a]}\nwarm: 9\n":                                                            "warm must be 0 to 8",
		"harness: {command: [a]}\nepisode: {max_turn_events: -1}\n":                                     "max_turn_events must not be negative",
		"harness: {command: [a]}\nepisode: {max_turn_event_bytes: -1}\n":                                "invalid size",
		"harness: {command: [a]}\ntools:\n  - {name: t, command: [x], isolation: vm}\n":                 "isolation must be sandbox or host",
		"harness: {command: [a]}\ntools:\n  - {name: t, url: http://x, network: true}\n":                "apply to stdio servers",
	}
	for y, want := range cases {
		_, err := ParseConfig([]byte(y), "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: err %v, want %q", y, err, want)
		}
	}
}

// TestAllowPrivateAdmitsAPrivateMirror: the control of the private-literal
// refusal of TestParseConfigErrors: with network.allow_private the same
// list parses.
func TestAllowPrivateAdmitsAPrivateMirror(t *testing.T) {
	cfg, err := ParseConfig([]byte("harness: {command: [a]}\nisolation: sandbox\nnetwork: {egress: allow, allow_private: true, allow: [\"10.0.0.5:8080\", pypi.org]}\n"), "")
	if err != nil || !cfg.Network.AllowPrivate {
		t.Fatalf("%+v %v", cfg.Network, err)
	}
}

func TestParseModelEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"http://127.0.0.1:8001":         "http://127.0.0.1:8001",
		"http://127.0.0.1:8001/":        "http://127.0.0.1:8001",
		"http://127.0.0.1:8001/v1":      "http://127.0.0.1:8001",
		"https://h/v1beta/":             "https://h",
		"http://h/rollout/7/v1":         "http://h/rollout/7",
		"http://h/openai/v1/chat":       "http://h/openai/v1/chat",
		"http://h/prefix/gemini-api/v1": "http://h/prefix/gemini-api",
		"http://[::1]:8000/v1":          "http://[::1]:8000",
	} {
		got, err := ParseModelEndpoint(in)
		if err != nil || got.Root != want {
			t.Errorf("%q -> %q, %v; want %q", in, got.Root, err, want)
		}
	}
	// http:///x is the case the two old parsers disagreed on.
	for _, bad := range []string{"127.0.0.1:8001", "ftp://h", "http://", "http:///v1", "http:///x", "http://u:p@h/v1", "http://h/v1?x=1", "http://h/#f", "http://:80/"} {
		if _, err := ParseModelEndpoint(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A host without a scheme says what is missing, however url.Parse
	// takes it (an error for 127.0.0.1:8001, the scheme localhost for
	// localhost:8001).
	for _, bare := range []string{"127.0.0.1:8001", "localhost:8001", "vllm.internal"} {
		want := fmt.Sprintf("model url %q: want http:// or https:// before the host (http://%s)", bare, bare)
		if _, err := ParseModelEndpoint(bare); err == nil || err.Error() != want {
			t.Errorf("%q: %v; want %q", bare, err, want)
		}
	}
	if e, _ := ParseModelEndpoint("http://h:1/v1"); e.OpenAIBase() != "http://h:1/v1" {
		t.Errorf("OpenAIBase %q", e.OpenAIBase())
	}
}

func TestModelKeyCheck(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	m := ModelConfig{URL: "http://h", APIKeyEnv: "MY_KEY"}
	if err := m.CheckKey(env(nil)); err == nil || !strings.Contains(err.Error(), "MY_KEY is not set") {
		t.Errorf("unset key: %v", err)
	}
	if err := m.CheckKey(env(map[string]string{"MY_KEY": "k"})); err != nil {
		t.Errorf("set key: %v", err)
	}
	m.APIKeyEnv = OrchestrationTokenEnv
	if err := m.CheckKey(env(map[string]string{OrchestrationTokenEnv: "t"})); err == nil || !strings.Contains(err.Error(), "never a model key") {
		t.Errorf("orchestration token as the key: %v", err)
	}
	m = ModelConfig{URL: "http://h"}
	m.UsePresetDialect("anthropic")
	if m.Dialect != "anthropic" {
		t.Errorf("preset dialect not applied: %q", m.Dialect)
	}
	m = ModelConfig{URL: "http://h", Upstream: ModelUpstreamEngine}
	if m.UsePresetDialect("anthropic"); m.Dialect != "" {
		t.Errorf("an engine got a dialect: %q", m.Dialect)
	}
}

func TestSideDoorsListHostToolServers(t *testing.T) {
	c, err := ParseConfig([]byte("harness: {command: [a]}\ntools:\n  - {name: boxed, command: [x]}\n  - {name: open, command: [y], isolation: host}\n  - {name: remote, url: http://127.0.0.1:1/mcp}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if d := c.SideDoors(""); len(d) != 1 || !strings.Contains(d[0], `"open"`) || !strings.Contains(d[0], "isolation: host") {
		t.Errorf("side doors %q, want the isolation: host server only", d)
	}
	if d := c.SideDoors(IsolationProcess); len(d) != 2 {
		t.Errorf("process isolation: side doors %q, want both stdio servers", d)
	}
}

// ParseConfig reports every problem at once: a bad value and an unknown
// key no longer stop decoding, and validation still runs on the rest.
func TestParseConfigReportsEveryProblem(t *testing.T) {
	cfg, err := ParseConfig([]byte("harness:\n  command: [a]\n  startup_timeout: soon\n  comand: [b]\nepisode:\n  max_turns: -1\n  turn_timeout: 5s\nwarm: 99\n"), "")
	if cfg == nil || err == nil {
		t.Fatalf("cfg %v, err %v", cfg, err)
	}
	for _, want := range []string{`line 3: harness.startup_timeout: invalid duration "soon"`, "line 4: unknown key comand", "max_turns must not be negative", "warm must be 0 to 8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if cfg.Episode.TurnTimeout.D() != 5*time.Second {
		t.Errorf("keys after the bad ones were not decoded: turn_timeout %v", cfg.Episode.TurnTimeout)
	}
	if _, err := ParseConfig([]byte("harness: [unclosed\n"), ""); err == nil {
		t.Error("text that is not YAML accepted")
	}
}

// harness.model.sampling is read from YAML into the gateway's pin and
// checked: values in range, an engine upstream only.
func TestModelSampling(t *testing.T) {
	c, err := ParseConfig([]byte("harness:\n  command: [a]\n  model:\n    url: http://127.0.0.1:1\n    upstream: engine\n"+
		"    sampling: {temperature: 1.0, top_p: 0.95, top_k: -1, min_p: 0, seed: 7, max_tokens: 512, allow: [logit_bias], strip_stop: true}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	s := c.Harness.Model.Sampling
	if s == nil || *s.Temperature != 1 || *s.TopP != 0.95 || *s.TopK != -1 || *s.MinP != 0 || *s.Seed != 7 || *s.MaxTokens != 512 ||
		len(s.Allow) != 1 || !s.StripStop {
		t.Fatalf("sampling %+v", s)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"    upstream: engine\n    sampling: {top_p: 2}\n", "top_p"},
		{"    upstream: engine\n    sampling: {allow: [tools]}\n", "not a sampling field"},
		{"    sampling: {temperature: 1}\n", "engine upstream only"},
		{"    upstream: engine\n    sampling: {temprature: 1}\n", "temprature"},
	} {
		_, err := ParseConfig([]byte("harness:\n  command: [a]\n  model:\n    url: http://127.0.0.1:1\n"+bad.yaml), "")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error about %s", bad.yaml, err, bad.want)
		}
	}
}
