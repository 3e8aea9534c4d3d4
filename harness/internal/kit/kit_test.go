package kit

import (
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/environ"
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
		t.Fatal("lookup")
	}
}

func TestDecodeOptions(t *testing.T) {
	var dst struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	if err := DecodeOptions(map[string]any{"n": 3, "s": "x"}, &dst); err != nil || dst.N != 3 || dst.S != "x" {
		t.Fatalf("%+v %v", dst, err)
	}
	for opts, want := range map[string]map[string]any{
		`unknown key "m"`: {"m": 1},
		"harness.options.n: a string cannot be a whole number": {"n": "three"},
	} {
		if err := DecodeOptions(want, &dst); err == nil || !strings.Contains(err.Error(), opts) {
			t.Errorf("%v: %v, want %q", want, err, opts)
		}
	}
}
