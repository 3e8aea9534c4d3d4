package agents

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/process"
)

const (
	testKey   = "sk-test-secret-0123456789"
	testToken = "bridge-token-abcdef"
)

// fakeInstall makes a directory holding an executable for every preset's
// program (a shell script that is never run).
func fakeInstall(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range testCatalog.All() {
		if err := os.WriteFile(filepath.Join(dir, p.Program), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// apply does what harnessd does with a configuration naming a preset:
// Apply on its harness section, the preset's dialect for a passthrough
// upstream, and the model's URL and key checked (lookup nil: the test's
// environment).
func apply(cfg *config.Config, opts ApplyOptions, lookup func(string) (string, bool)) error {
	p, err := testCatalog.Apply(&cfg.Harness.Config, opts)
	if p != nil {
		cfg.Harness.Model.UsePresetDialect(p.Dialect)
	}
	errs := []error{err, cfg.Harness.Model.CheckKey(lookup)}
	if _, perr := config.ParseModelEndpoint(cfg.Harness.Model.URL); perr != nil {
		errs = append(errs, perr)
	}
	return errors.Join(errs...)
}

// shipped lists the package's presets (not the test's own).
func shipped() []*Preset {
	var out []*Preset
	for _, p := range testCatalog.All() {
		if p != testPreset {
			out = append(out, p)
		}
	}
	return out
}

func shippedNames() []string {
	var names []string
	for _, p := range shipped() {
		names = append(names, p.Name)
	}
	return names
}

func TestPresetsAreComplete(t *testing.T) {
	want := []string{"claude-acp", "claude-code", "codex", "copilot", "gemini", "goose", "opencode", "qwen"}
	if got := shippedNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("presets %v, want %v", got, want)
	}
	registered := testAdapters.Names()
	for _, p := range shipped() {
		if p.Title == "" || p.Setup == nil || len(p.BuiltinTools) == 0 || p.ToolPrefix == "" {
			t.Errorf("%s: incomplete preset %+v", p.Name, p)
		}
		if p.Adapter != "acp" && p.Adapter != "claude" {
			t.Errorf("%s: adapter %q", p.Name, p.Adapter)
		}
		if !slices.Contains(registered, p.AdapterName()) || !slices.Contains(registered, p.Adapter) {
			t.Errorf("%s: adapters %s/%s not registered: %v", p.Name, p.AdapterName(), p.Adapter, registered)
		}
		if p.Verified != (p.Package != "" && p.Version != "") {
			t.Errorf("%s: verified=%v but package %q version %q", p.Name, p.Verified, p.Package, p.Version)
		}
	}
	if p, _ := testCatalog.Lookup("goose"); p.Verified {
		t.Error("goose is not on npm and cannot be verified here")
	}
}

func TestApplyFillsFromPreset(t *testing.T) {
	dir := fakeInstall(t)
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "gemini"}}}
	if err := apply(cfg, ApplyOptions{Dir: dir, PATH: "/nonexistent"}, nil); err != nil {
		t.Fatal(err)
	}
	h := cfg.Harness
	if h.Adapter != "agent:gemini" {
		t.Errorf("adapter %q", h.Adapter)
	}
	want := []string{filepath.Join(dir, "gemini"), "--acp", "--yolo", "--skip-trust"}
	if !reflect.DeepEqual(h.Command, want) {
		t.Errorf("command %q, want %q", h.Command, want)
	}
	if !slices.Contains(h.BuiltinTools, "read_file") {
		t.Errorf("builtin tools %v", h.BuiltinTools)
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "gemini" {
		t.Errorf("name %q", cfg.Name)
	}
	a, err := testAdapters.New(&cfg.Harness.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*Adapter); !ok {
		t.Fatalf("adapter %T", a)
	}
	// Idempotent.
	before := cfg.Harness
	if err := apply(cfg, ApplyOptions{Dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, cfg.Harness) {
		t.Errorf("second Apply changed the config:\n%+v\n%+v", before, cfg.Harness)
	}
	// Without an agent Apply does nothing.
	plain := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"x"}}}}
	if err := apply(plain, ApplyOptions{}, nil); err != nil || plain.Harness.Adapter != "" {
		t.Errorf("apply without agent: %v %+v", err, plain.Harness)
	}
}

func TestApplyUserSettingsWin(t *testing.T) {
	dir := fakeInstall(t)
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{
		Agent:        "claude-code",
		Adapter:      "claude", // the preset's inner adapter is accepted
		Command:      []string{"/opt/claude/bin/claude", "--debug"},
		BuiltinTools: []string{"mine"},
		Options:      map[string]any{"permission_mode": "default", "include_partial_messages": true},
	}}}
	if err := apply(cfg, ApplyOptions{Dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	h := cfg.Harness
	if h.Adapter != "agent:claude-code" {
		t.Errorf("adapter %q", h.Adapter)
	}
	if !reflect.DeepEqual(h.Command, []string{"/opt/claude/bin/claude", "--debug"}) {
		t.Errorf("command %q: a configured command is kept", h.Command)
	}
	if !reflect.DeepEqual(h.BuiltinTools, []string{"mine"}) {
		t.Errorf("builtin tools %v", h.BuiltinTools)
	}
	if h.Options["permission_mode"] != "default" || h.Options["include_partial_messages"] != true {
		t.Errorf("options %v", h.Options)
	}
	// A key the configuration leaves out is the preset's.
	under := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "claude-code",
		Options: map[string]any{"include_partial_messages": true}}}}
	if err := apply(under, ApplyOptions{Dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	if o := under.Harness.Options; o["permission_mode"] != "bypassPermissions" || o["include_partial_messages"] != true {
		t.Errorf("options %v: the preset's are not filled in under the configuration's", o)
	}
	p, _ := testCatalog.Lookup("claude-code")
	if p.Options["permission_mode"] != "bypassPermissions" {
		t.Error("Apply modified the preset")
	}
	if _, err := testAdapters.New(&cfg.Harness.Config); err != nil {
		t.Fatal(err)
	}

	bad := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "gemini", Adapter: "claude"}}}
	if err := apply(bad, ApplyOptions{Dir: dir}, nil); err == nil || !strings.Contains(err.Error(), "conflicts") {
		t.Errorf("conflicting adapter: %v", err)
	}
	unknown := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "vim"}}}
	if err := apply(unknown, ApplyOptions{}, nil); err == nil || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("unknown agent: %v", err)
	}
	// Strict options of the inner adapter still apply.
	typo := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "gemini", Options: map[string]any{"moed": "x"}}}}
	if err := apply(typo, ApplyOptions{Dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := testAdapters.New(&typo.Harness.Config); err == nil || !strings.Contains(err.Error(), "moed") {
		t.Errorf("unknown option: %v", err)
	}
}

func TestApplyErrors(t *testing.T) {
	empty := t.TempDir()
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "opencode"}}}
	err := apply(cfg, ApplyOptions{Dir: empty, PATH: empty}, nil)
	if err == nil {
		t.Fatal("no error for a missing program")
	}
	for _, want := range []string{"opencode", empty, "npm install opencode-ai@1.18.33", "make agents"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	dir := fakeInstall(t)
	cfg = &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "gemini"}, Model: config.ModelConfig{URL: "localhost:8000", APIKeyEnv: "MY_KEY"}}}
	err = apply(cfg, ApplyOptions{Dir: dir}, lookupFrom(nil))
	if err == nil || !strings.Contains(err.Error(), "MY_KEY is not set") || !strings.Contains(err.Error(), "http://") {
		t.Errorf("model errors: %v", err)
	}
	cfg.Harness.Model.APIKeyEnv = config.OrchestrationTokenEnv
	err = apply(cfg, ApplyOptions{Dir: dir}, lookupFrom(map[string]string{config.OrchestrationTokenEnv: "t"}))
	if err == nil || !strings.Contains(err.Error(), "never a model key") {
		t.Errorf("orchestration token as model key: %v", err)
	}
	cfg.Harness.Model.APIKeyEnv = "MY_KEY"
	cfg.Harness.Model.URL = "http://localhost:8000"
	if err := apply(cfg, ApplyOptions{Dir: dir}, lookupFrom(map[string]string{"MY_KEY": "k"})); err != nil {
		t.Errorf("valid model: %v", err)
	}
}

func TestLocate(t *testing.T) {
	p, _ := testCatalog.Lookup("gemini")
	// An npm layout: node_modules/.bin/gemini -> ../@google/gemini-cli/bundle/gemini.js
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@google", "gemini-cli")
	if err := os.MkdirAll(filepath.Join(pkg, "bundle"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@google/gemini-cli","version":"9.8.7"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "bundle", "package.json"), []byte(`{"type":"module"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "bundle", "gemini.js"), []byte("#!/usr/bin/env node\n"), 0o755)
	bin := filepath.Join(root, "node_modules", ".bin")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink("../@google/gemini-cli/bundle/gemini.js", filepath.Join(bin, "gemini")); err != nil {
		t.Fatal(err)
	}
	onPath := fakeInstall(t)

	for _, dir := range []string{root, bin} {
		in, ok := Locate(p, dir, onPath)
		if !ok || in.Path != filepath.Join(bin, "gemini") || in.Source != SourceAgentsDir || in.Version != "9.8.7" {
			t.Errorf("Locate(%s) = %+v %v", dir, in, ok)
		}
	}
	in, ok := Locate(p, "", onPath)
	if !ok || in.Path != filepath.Join(onPath, "gemini") || in.Source != SourcePATH || in.Version != "" {
		t.Errorf("PATH: %+v %v", in, ok)
	}
	// Not executable, a directory, or a relative PATH entry: not found.
	noexec := t.TempDir()
	os.WriteFile(filepath.Join(noexec, "gemini"), nil, 0o644)
	os.MkdirAll(filepath.Join(noexec, "sub", "gemini"), 0o755)
	if in, ok := Locate(p, noexec, filepath.Join(noexec, "sub")+string(filepath.ListSeparator)+"rel"); ok {
		t.Errorf("found %+v", in)
	}
	t.Setenv(DirEnvVar, root)
	if AgentsDir("") != root || AgentsDir("x") != "x" {
		t.Error("AgentsDir")
	}
}

func TestModelHelpers(t *testing.T) {
	m := Model{Root: "http://h:1"}
	if m.OpenAIBase() != "http://h:1/v1" || !m.Custom() || (Model{}).Custom() {
		t.Error("Model helpers")
	}
}

// prepared runs Apply, makes the wrapping adapter and prepares an episode.
func prepared(t *testing.T, cfg *config.Config, daemonEnv ...string) (*harness.Launch, map[string]string) {
	t.Helper()
	if err := apply(cfg, ApplyOptions{Dir: fakeInstall(t)}, lookupFrom(map[string]string{"TEST_MODEL_KEY": testKey})); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	a, err := testAdapters.New(&cfg.Harness.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_MODEL_KEY", testKey)
	home := filepath.Join(t.TempDir(), "home")
	os.MkdirAll(home, 0o700)
	set := map[string]string{"HOME": home}
	for k, v := range cfg.Harness.Env {
		set[k] = v
	}
	base := append([]string{"PATH=/usr/bin:/bin"}, daemonEnv...)
	l := &harness.Launch{
		Command:   cfg.Harness.Command,
		Workspace: t.TempDir(),
		Home:      home,
		Env:       process.Environ(base, append([]string{"PATH"}, cfg.Harness.PassEnv...), set),
		MCP:       &harness.MCPInjection{ServerName: "env", URL: "http://127.0.0.1:1/mcp", Token: testToken},
		// As the session does: the URL is the episode's model gateway's and
		// the key its per-episode key (here testKey); the real key's
		// variable never reaches the preset.
		Model: harness.ModelAccess{Root: cfg.Harness.Model.Endpoint().Root, Name: cfg.Harness.Model.Name}}
	if cfg.Harness.Model.APIKeyEnv != "" {
		l.Model.Key = testKey
	}
	ll, err := a.(*Adapter).Prepare(l)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range ll.Env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("duplicate variable %s", k)
		}
		env[k] = v
	}
	return ll, env
}

// homeFiles reads every file under home, checking modes and that no secret
// is in any of them.
func homeFiles(t *testing.T, home string) map[string]string {
	t.Helper()
	files := map[string]string{}
	filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(home, path)
		if d.IsDir() {
			if rel != "." && info.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v", rel, info.Mode().Perm())
			}
			return nil
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", rel, info.Mode().Perm())
		}
		b, _ := os.ReadFile(path)
		for _, secret := range []string{testKey, testToken} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s holds a secret: %s", rel, b)
			}
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files
}

func jsonFile(t *testing.T, files map[string]string, rel string) map[string]any {
	t.Helper()
	s, ok := files[rel]
	if !ok {
		t.Fatalf("%s not written (files: %v)", rel, keys(files))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

func keys[M ~map[string]V, V any](m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// dig follows a path of object keys.
func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

func wantEnv(t *testing.T, env map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s=%q (set: %v), want %q", k, got, ok, v)
		}
	}
}

func modelConfig() config.ModelConfig {
	return config.ModelConfig{URL: "http://127.0.0.1:9/v1/", Name: "m-1", APIKeyEnv: "TEST_MODEL_KEY"}
}

// TestEpisodeSetup checks, for every preset, the environment mapping of the
// model knobs and the files written into the private HOME.
func TestEpisodeSetup(t *testing.T) {
	root := "http://127.0.0.1:9"
	cases := map[string]struct {
		env   map[string]string
		files func(t *testing.T, home string, files map[string]string)
	}{
		"claude-code": {env: map[string]string{"ANTHROPIC_BASE_URL": root, "ANTHROPIC_API_KEY": testKey, "ANTHROPIC_MODEL": "m-1",
			"ANTHROPIC_DEFAULT_HAIKU_MODEL": "m-1", "ANTHROPIC_DEFAULT_OPUS_MODEL": "m-1", "CLAUDE_CODE_SUBAGENT_MODEL": "m-1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}},
		"claude-acp": {env: map[string]string{"ANTHROPIC_BASE_URL": root, "ANTHROPIC_API_KEY": testKey, "ANTHROPIC_DEFAULT_SONNET_MODEL": "m-1"}},
		"gemini": {
			env: map[string]string{"GOOGLE_GEMINI_BASE_URL": root, "GEMINI_API_KEY": testKey, "GEMINI_MODEL": "m-1", "GEMINI_CLI_TRUST_WORKSPACE": "true"},
			files: func(t *testing.T, home string, files map[string]string) {
				s := jsonFile(t, files, ".gemini/settings.json")
				if dig(s, "security", "auth", "selectedType") != "gemini-api-key" || dig(s, "privacy", "usageStatisticsEnabled") != false ||
					dig(s, "telemetry", "enabled") != false || dig(s, "general", "disableAutoUpdate") != true || dig(s, "model", "name") != "m-1" {
					t.Errorf("settings %v", s)
				}
			}},
		"qwen": {
			env: map[string]string{"OPENAI_BASE_URL": root + "/v1", "OPENAI_API_KEY": testKey, "OPENAI_MODEL": "m-1"},
			files: func(t *testing.T, home string, files map[string]string) {
				s := jsonFile(t, files, ".qwen/settings.json")
				if dig(s, "memory", "enableManagedAutoMemory") != false || dig(s, "security", "auth", "selectedType") != "openai" ||
					dig(s, "telemetry", "enabled") != false {
					t.Errorf("settings %v", s)
				}
			}},
		"opencode": {
			env: map[string]string{"OPENAI_API_KEY": testKey, "OPENCODE_DISABLE_AUTOUPDATE": "true", "OPENCODE_DISABLE_MODELS_FETCH": "true"},
			files: func(t *testing.T, home string, files map[string]string) {
				c := jsonFile(t, files, ".config/opencode/opencode.json")
				p := dig(c, "provider", "harnessd")
				if dig(c, "model") != "harnessd/m-1" || dig(c, "small_model") != "harnessd/m-1" ||
					dig(c, "permission", "*") != "allow" || dig(c, "autoupdate") != false || dig(c, "share") != "disabled" ||
					dig(c, "agent", "title", "disable") != true || p == nil {
					t.Fatalf("config %v", c)
				}
				pm := p.(map[string]any)
				if pm["npm"] != "@ai-sdk/openai-compatible" || dig(pm, "options", "baseURL") != root+"/v1" ||
					dig(pm, "options", "apiKey") != "{env:OPENAI_API_KEY}" || dig(pm, "models", "m-1", "name") != "m-1" {
					t.Errorf("provider %v", pm)
				}
				// The models.dev catalog opencode builds at start is empty
				// (OPENCODE_MODELS_PATH): the endpoint's provider is all in
				// the config.
				if m := jsonFile(t, files, ".config/opencode/models.json"); len(m) != 0 {
					t.Errorf("models catalog %v, want empty", m)
				}
			}},
		"copilot": {env: map[string]string{"COPILOT_PROVIDER_BASE_URL": root + "/v1", "COPILOT_PROVIDER_TYPE": "openai",
			"COPILOT_PROVIDER_API_KEY": testKey, "COPILOT_MODEL": "m-1", "COPILOT_OFFLINE": "true", "COPILOT_AUTO_UPDATE": "false"}},
		"codex": {
			env: map[string]string{"OPENAI_API_KEY": testKey},
			files: func(t *testing.T, home string, files map[string]string) {
				c := files[".codex/config.toml"]
				for _, want := range []string{`model = "m-1"`, `model_provider = "harnessd"`, `approval_policy = "never"`,
					`sandbox_mode = "danger-full-access"`, "[model_providers.harnessd]", `base_url = "` + root + `/v1"`,
					`env_key = "OPENAI_API_KEY"`, `wire_api = "responses"`} {
					if !strings.Contains(c, want) {
						t.Errorf("config.toml lacks %s:\n%s", want, c)
					}
				}
			}},
		"goose": {env: map[string]string{"GOOSE_PROVIDER": "openai", "OPENAI_HOST": root, "OPENAI_BASE_PATH": "v1/chat/completions",
			"OPENAI_API_KEY": testKey, "GOOSE_MODEL": "m-1", "GOOSE_MODE": "auto"}},
	}
	for _, name := range shippedNames() {
		c, ok := cases[name]
		if !ok {
			t.Errorf("no case for preset %s", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: name}, Model: modelConfig()}}
			l, env := prepared(t, cfg)
			home := l.Home
			wantEnv(t, env, c.env)
			wantEnv(t, env, map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
				"XDG_DATA_HOME": filepath.Join(home, ".local/share"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
				"XDG_STATE_HOME": filepath.Join(home, ".local/state"), "DO_NOT_TRACK": "1", "PATH": "/usr/bin:/bin"})
			// Every path the preset gives the agent is inside the private HOME.
			for k, v := range env {
				if strings.HasPrefix(v, "/") && k != "PATH" && !strings.HasPrefix(v, home) {
					t.Errorf("%s=%s is outside the episode's HOME", k, v)
				}
			}
			for k, v := range env {
				if strings.Contains(v, testToken) {
					t.Errorf("%s carries the bridge token", k)
				}
			}
			files := homeFiles(t, home)
			if c.files != nil {
				c.files(t, home, files)
			}
			if !reflect.DeepEqual(l.Options, cfg.Harness.Options) {
				t.Errorf("options %v, want %v", l.Options, cfg.Harness.Options)
			}
		})
	}
}

func TestEpisodeSetupConfiguredEnvWins(t *testing.T) {
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "gemini", Env: map[string]string{"GEMINI_MODEL": "mine", "DO_NOT_TRACK": "0"}, PassEnv: []string{"GOOGLE_*"}}, Model: modelConfig()}}
	_, env := prepared(t, cfg, "GOOGLE_GEMINI_BASE_URL=http://passed", "GEMINI_API_KEY=not-passed")
	wantEnv(t, env, map[string]string{"GEMINI_MODEL": "mine", "DO_NOT_TRACK": "0",
		"GOOGLE_GEMINI_BASE_URL": "http://passed", "GEMINI_API_KEY": testKey})
}

func TestEpisodeSetupWithoutEndpoint(t *testing.T) {
	for _, name := range shippedNames() {
		t.Run(name, func(t *testing.T) {
			cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: name}}}
			l, env := prepared(t, cfg)
			for _, k := range []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY",
				"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_HOST", "COPILOT_PROVIDER_BASE_URL", "COPILOT_OFFLINE", "GEMINI_MODEL",
				"OPENCODE_MODELS_PATH"} {
				if v, ok := env[k]; ok {
					t.Errorf("%s=%q set without an endpoint", k, v)
				}
			}
			files := homeFiles(t, l.Home)
			if s, ok := files[".gemini/settings.json"]; ok && strings.Contains(s, "selectedType") {
				t.Errorf("auth type pinned without a key: %s", s)
			}
			if s, ok := files[".config/opencode/opencode.json"]; ok && strings.Contains(s, "provider") {
				t.Errorf("provider without an endpoint: %s", s)
			}
		})
	}
}

func TestEpisodeSetupPlaceholderKeyAndDefaultModel(t *testing.T) {
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Agent: "opencode"}, Model: config.ModelConfig{URL: "http://h:1"}}}
	l, env := prepared(t, cfg)
	wantEnv(t, env, map[string]string{"OPENAI_API_KEY": PlaceholderKey})
	c := jsonFile(t, homeFiles(t, l.Home), ".config/opencode/opencode.json")
	if dig(c, "model") != "harnessd/default" {
		t.Errorf("model %v", dig(c, "model"))
	}
}

func TestEpisodeWritesOnlyUnderHome(t *testing.T) {
	e := &Episode{Home: t.TempDir()}
	for _, bad := range []string{"../x", "/etc/x", "a/../../x"} {
		if err := e.WriteFile(bad, nil); err == nil {
			t.Errorf("%q written", bad)
		}
	}
	if err := (&Episode{}).WriteFile("x", nil); err == nil {
		t.Error("written without a HOME")
	}
	e.Setenv("A", "1")
	e.AddArgs("--x")
	if v, _ := e.Getenv("A"); v != "1" || !reflect.DeepEqual(e.Args(), []string{"--x"}) || !reflect.DeepEqual(e.Env(), []string{"A=1"}) {
		t.Error("Episode accessors")
	}
}

func TestTOMLString(t *testing.T) {
	for in, want := range map[string]string{`a`: `"a"`, `a"b\c`: `"a\"b\\c"`, "x\ny\x7f": `"x\u000Ay\u007F"`, "é": `"é"`} {
		if got := kit.TOMLString(in); got != want {
			t.Errorf("%q -> %s, want %s", in, got, want)
		}
	}
}
