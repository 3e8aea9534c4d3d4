package adapterkit

import (
	"github.com/harnessd/harnessd/internal/environ"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

func TestEnv(t *testing.T) {
	l := &harness.Launch{EpisodeID: "ep", Workspace: "/w", Env: []string{"PATH=/bin", "TERM=dumb", "HARNESSD_MCP_URL=stale"},
		MCP: &harness.MCPInjection{URL: "http://b", Token: "t", ConfigPath: "/c"}}
	env := Env(l, "TERM=xterm")
	got := strings.Join(env, " ")
	want := "PATH=/bin HARNESSD_EPISODE_ID=ep HARNESSD_WORKSPACE=/w HARNESSD_MCP_URL=http://b HARNESSD_MCP_TOKEN=t HARNESSD_MCP_CONFIG=/c TERM=xterm"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if v, ok := environ.Lookup(env, "TERM"); !ok || v != "xterm" {
		t.Fatalf("Lookup(TERM) = %q, %v", v, ok)
	}
	if _, ok := environ.Lookup(env, "HOME"); ok {
		t.Fatal("Lookup found an unset variable")
	}
}

func TestEnvWithoutTools(t *testing.T) {
	// A configured bridge URL stays when the environment has no tools (the
	// adversarial tests point a harness at another daemon that way).
	l := &harness.Launch{EpisodeID: "ep", Workspace: "/w", Env: []string{"HARNESSD_MCP_URL=configured", "HARNESSD_EPISODE_ID=old"}}
	got := strings.Join(Env(l), " ")
	if want := "HARNESSD_MCP_URL=configured HARNESSD_EPISODE_ID=ep HARNESSD_WORKSPACE=/w"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
