package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/harness/agents"
)

func TestLinkedAdaptersAndPresets(t *testing.T) {
	x, err := linked()
	if err != nil {
		t.Fatal(err)
	}
	wantPresets := []string{"claude-acp", "claude-code", "codex", "copilot", "gemini", "goose", "opencode", "qwen"}
	if got := x.presets.Names(); !slices.Equal(got, wantPresets) {
		t.Fatalf("presets %v, want %v", got, wantPresets)
	}
	if got, want := protocolAdapters(x.adapters), []string{"acp", "claude", "exec", "jsonl", "pty"}; !slices.Equal(got, want) {
		t.Fatalf("protocol adapters %v, want %v", got, want)
	}
	for _, p := range x.presets.All() {
		cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Adapter: p.AdapterName(), Command: []string{p.Program}}}}
		a, err := x.adapters.New(&cfg.Harness.Config)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		if w, ok := a.(*agents.Adapter); !ok || w.Preset() != p {
			t.Errorf("%s: adapter %T", p.Name, a)
		}
	}
}

func TestLinkRejectsDuplicates(t *testing.T) {
	_, err := link([]protocolAdapter{{jsonl.Name, jsonl.Factory}, {jsonl.Name, jsonl.Factory}},
		[]*agents.Preset{agents.Goose(), agents.Goose()})
	if err == nil || !strings.Contains(err.Error(), `adapter "jsonl" added twice`) || !strings.Contains(err.Error(), `preset "goose" added twice`) {
		t.Fatalf("link with duplicates: %v", err)
	}
}
