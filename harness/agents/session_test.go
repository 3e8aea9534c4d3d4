package agents

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/acp"
	"github.com/harnessd/harnessd/harness/adapter/streamjson"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

// testCatalog and testAdapters are what these tests turn configurations
// into adapters with: the shipped presets and testPreset, linked as
// cmd/harnessd links them.
var testCatalog, testAdapters = mustLink(append(shippedPresets(), testPreset))

// shippedPresets lists the package's presets.
func shippedPresets() []*Preset {
	return []*Preset{ClaudeACP(), ClaudeCode(), Codex(), Copilot(), Gemini(), Goose(), OpenCode(), Qwen()}
}

// mustLink builds a catalog of presets and a registry with the acp and
// claude adapters and the presets' wrapping adapters.
func mustLink(presets []*Preset) (*Catalog, *harness.Registry) {
	c, r := &Catalog{}, &harness.Registry{}
	errs := []error{r.Add(acp.Name, acp.Factory), r.Add(streamjson.Name, streamjson.Factory)}
	for _, p := range presets {
		errs = append(errs, c.Add(p), r.Add(p.AdapterName(), Factory(p, r)))
	}
	if err := errors.Join(errs...); err != nil {
		panic(err)
	}
	return c, r
}

// testPreset drives the fake ACP agent (testharness agent --protocol acp)
// through a preset, so that the wrapping adapter runs a real session
// without Node.
var testPreset = &Preset{
	Name:         "test-acp",
	Title:        "testharness ACP agent",
	Adapter:      "acp",
	Program:      "testharness",
	Args:         []string{"agent", "--protocol", "acp"},
	Options:      map[string]any{"mode": "yolo"},
	BuiltinTools: []string{"echo"},
	ToolPrefix:   "S_",
	Setup: func(e *Episode) error {
		e.Setenv("TEST_PRESET_FILE", e.Path("preset", "marker.txt"))
		e.Setenv("TEST_PRESET_MODEL", e.Model.Root+" "+e.Model.Name)
		e.AddArgs("--stderr", "preset-setup-ran")
		return e.WriteFile("preset/marker.txt", []byte("written by the preset"))
	},
}

// TestPresetSessionEndToEnd runs two episodes of a real session through the
// wrapping adapter: the preset's files and variables reach the agent, the
// inner adapter injects the tool bridge, the configuration's settings win,
// and every episode gets a fresh HOME.
func TestPresetSessionEndToEnd(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), 0)
	cfg := &config.Config{
		Harness:   config.HarnessConfig{Config: harness.Config{Agent: "test-acp", Env: map[string]string{"MINE": "configured"}}, Model: config.ModelConfig{URL: "http://127.0.0.1:9/v1", Name: "tiny"}},
		Tools:     []config.ToolConfig{{Name: "tools", Command: []string{bin, "tools"}}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
	}
	if err := apply(cfg, ApplyOptions{Dir: filepath.Dir(bin)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := testAdapters.New(&cfg.Harness.Config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(session.Options{Config: cfg, Supervisor: sup, Logger: log, Adapter: a})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var homes, files []string
	for ep := range 2 {
		obs, err := s.Reset(ctx, session.ResetOptions{})
		if err != nil || obs.Done {
			t.Fatalf("reset: %v %+v", err, obs)
		}
		// The preset's builtin tool name renames the environment's echo.
		if !strings.Contains(strings.Join(obs.Metadata.InjectedTools, ","), "env_echo") {
			t.Errorf("tools %v", obs.Metadata.InjectedTools)
		}
		obs, err = s.Step(ctx, wire.Action{Message: "env TEST_PRESET_FILE;;env TEST_PRESET_MODEL;;env MINE;;env HOME;;acp mode;;tool env_echo {\"text\":\"hi\"}"}, nil)
		if err != nil || obs.Done {
			t.Fatalf("step: %v %+v", err, obs)
		}
		r := ""
		if obs.Metadata.Response != nil {
			r = *obs.Metadata.Response
		}
		home := between(r, "HOME=", "\n")
		file := between(r, "TEST_PRESET_FILE=", "\n")
		if home == "" || !strings.HasPrefix(file, home+"/") {
			t.Fatalf("episode %d: HOME %q, file %q in %q", ep, home, file, r)
		}
		// The agent is pointed at the episode's model gateway, never at
		// the configured upstream.
		if m := between(r, "TEST_PRESET_MODEL=", "\n"); !strings.HasPrefix(m, "http://127.0.0.1:") || !strings.HasSuffix(m, " tiny") ||
			strings.HasPrefix(m, "http://127.0.0.1:9 ") {
			t.Errorf("episode %d: model %q, want the gateway's loopback URL and the configured name", ep, m)
		}
		for _, want := range []string{"MINE=configured", "mode: yolo", "env_echo -> hi"} {
			if !strings.Contains(r, want) {
				t.Errorf("episode %d: response lacks %q:\n%s", ep, want, r)
			}
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "written by the preset" {
			t.Errorf("marker: %q %v", b, err)
		}
		if _, tail, _ := a.Diagnostics(); !strings.Contains(tail, "preset-setup-ran") {
			t.Errorf("the preset's argument did not reach the agent; stderr %q", tail)
		}
		homes, files = append(homes, home), append(files, file)
	}
	if homes[0] == homes[1] {
		t.Errorf("episodes share HOME %s", homes[0])
	}
	// The first episode's HOME is gone, or (its disk reused by a later
	// episode) emptied: its preset's marker is not there.
	if !strings.HasPrefix(files[0], homes[0]+"/") {
		t.Fatalf("the preset's marker %s is not in HOME %s", files[0], homes[0])
	}
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Errorf("first episode's HOME survives: its marker %s: %v", files[0], err)
	}
}

func between(s, start, end string) string {
	_, after, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, end)
	return v
}
