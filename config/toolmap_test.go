package config

import (
	"strings"
	"testing"
)

// A mapped entry serves its mode's side under its own name, in its own
// fields; SetMode selects the other side; relative dirs are the file's,
// and a relative program is its side's directory's.
func TestToolMappingSelectsTheModesSide(t *testing.T) {
	y := `
harness: {command: [agent]}
tools:
  - name: mail
    per_episode: true
    simulation: {command: [./fake-mail], dir: sim}
    production: {url: "https://mail.example.com/mcp", headers: {Authorization: "Bearer x"}}
`
	cfg, err := ParseConfig([]byte(y), "/base")
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Tools[0]
	if m.Name != "mail" || len(m.Command) != 1 || m.Command[0] != "/base/sim/fake-mail" || m.URL != "" || m.Dir != "/base/sim" || !m.PerEpisode {
		t.Fatalf("simulation side: %+v", m)
	}
	if err := cfg.SetMode(ModeProduction); err != nil {
		t.Fatal(err)
	}
	m = cfg.Tools[0]
	if m.URL != "https://mail.example.com/mcp" || len(m.Command) != 0 || m.Headers["Authorization"] != "Bearer x" || m.Dir != "/base" {
		t.Fatalf("production side: %+v", m)
	}
	if err := cfg.Normalize(); err != nil || cfg.Tools[0].URL == "" {
		t.Fatalf("normalize again: %v %+v", err, cfg.Tools[0])
	}
	ms := cfg.Mappings()
	if len(ms) != 1 || ms[0].Selected != ModeProduction || ms[0].Simulation.Describe() != "command /base/sim/fake-mail" {
		t.Fatalf("mappings: %+v", ms)
	}
	if w := cfg.Tools[0].WithSide(ModeSimulation); w.Command[0] != "/base/sim/fake-mail" || w.URL != "" || w.Dir != "/base/sim" {
		t.Fatalf("WithSide(simulation): %+v", w)
	}
	if err := cfg.SetMode("staging"); err == nil || !strings.Contains(err.Error(), `not "staging"`) {
		t.Fatalf("SetMode(staging): %v", err)
	}
}

func TestToolMappingProblems(t *testing.T) {
	for _, c := range []struct{ tools, want string }{
		{"[{name: m, simulation: {command: [a]}}]", "needs both sides"},
		{"[{name: m, command: [x], simulation: {command: [a]}, production: {url: http://h/mcp}}]", "not beside them"},
		{"[{name: m, simulation: {command: [a], url: http://h/mcp}, production: {url: http://h/mcp}}]", "simulation: exactly one of command or url"},
	} {
		_, err := ParseConfig([]byte("harness: {command: [agent]}\ntools: "+c.tools+"\n"), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.tools, err, c.want)
		}
	}
	if _, err := ParseConfig([]byte("harness: {command: [agent]}\nmode: live\n"), ""); err == nil || !strings.Contains(err.Error(), "mode must be") {
		t.Errorf("mode: live: %v", err)
	}
}

func TestUserConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte("harness: {command: [agent], model: {url: http://127.0.0.1:9/v1, api_key_env: K, name: m}}\nuser: {model: {prompt: be terse}}\n"), "/base")
	if err != nil {
		t.Fatal(err)
	}
	u := cfg.User
	if u.Timeout.D() != DefaultUserTimeout || u.Model.URL != "http://127.0.0.1:9/v1" || u.Model.APIKeyEnv != "K" || u.Model.Name != "m" ||
		u.Model.DoneMarker != DefaultUserDoneMarker || u.Model.Endpoint().OpenAIBase() != "http://127.0.0.1:9/v1" {
		t.Fatalf("model user defaults: %+v %+v", u, u.Model)
	}
	cfg, err = ParseConfig([]byte("harness: {command: [agent]}\nuser: {command: [./customer.py]}\n"), "/base")
	if err != nil || cfg.User.Command[0] != "/base/customer.py" {
		t.Fatalf("user program: %v %+v", err, cfg.User)
	}
	for _, c := range []struct{ user, want string }{
		{"{}", "exactly one of command or model"},
		{"{command: [a], model: {url: http://h}}", "exactly one of command or model"},
		{"{model: {prompt: x}}", "user.model.url is required"},
		{"{model: {url: http://h, prompt: x, prompt_file: y}}", "exclusive"},
	} {
		_, err := ParseConfig([]byte("harness: {command: [agent]}\nuser: "+c.user+"\n"), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("user %s: %v, want %q", c.user, err, c.want)
		}
	}
}

// TestRelativeToolProgramsAreTheirDirectorysFiles: a tool server's
// relative program ("../bin/server", "./server") is made absolute from the
// server's directory (dir:, else the configuration's), as the harness's is
// from the configuration's: inside its sandbox only the program's own
// directory is shown, not the parents of the one it runs in. A bare name
// stays one (PATH).
func TestRelativeToolProgramsAreTheirDirectorysFiles(t *testing.T) {
	y := `
harness: {command: [agent]}
tools:
  - {name: up, command: [../bin/server, tools]}
  - {name: here, command: [./server], dir: sub}
  - {name: bare, command: [python3, tools.py]}
`
	cfg, err := ParseConfig([]byte(y), "/base/envs")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"/base/bin/server", "/base/envs/sub/server", "python3"} {
		if got := cfg.Tools[i].Command[0]; got != want {
			t.Errorf("%s: program %q, want %q", cfg.Tools[i].Name, got, want)
		}
	}
}
