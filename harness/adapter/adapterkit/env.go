package adapterkit

import (
	"strings"

	"github.com/harnessd/harnessd/harness"
)

// Env returns the launch's environment with the harnessd variables every
// adapter gives its harness, then set applied on top: a "NAME=value" entry
// of set replaces any earlier NAME. The harnessd variables are
// HARNESSD_EPISODE_ID and HARNESSD_WORKSPACE always, and HARNESSD_MCP_URL,
// HARNESSD_MCP_TOKEN and HARNESSD_MCP_CONFIG when the environment has tools
// (l.MCP is not nil), and HARNESSD_MODEL_URL (the model gateway's root) and
// HARNESSD_MODEL_API_KEY (its per-episode key) when the episode has a model
// gateway (l.Model.Key is set); docs/protocol.md documents them. Values of these
// names already in l.Env are replaced; without tools, HARNESSD_MCP_* values
// the configuration put in l.Env (harness.env) are kept.
func Env(l *harness.Launch, set ...string) []string {
	add := []string{
		"HARNESSD_EPISODE_ID=" + l.EpisodeID,
		"HARNESSD_WORKSPACE=" + l.Workspace,
	}
	if l.MCP != nil {
		add = append(add,
			"HARNESSD_MCP_URL="+l.MCP.URL,
			"HARNESSD_MCP_TOKEN="+l.MCP.Token,
			"HARNESSD_MCP_CONFIG="+l.MCP.ConfigPath,
		)
	}
	if l.Model.Key != "" {
		add = append(add,
			"HARNESSD_MODEL_URL="+l.Model.Root,
			"HARNESSD_MODEL_API_KEY="+l.Model.Key,
		)
	}
	add = append(add, set...)
	override := map[string]bool{}
	for _, kv := range add {
		name, _, _ := strings.Cut(kv, "=")
		override[name] = true
	}
	env := make([]string, 0, len(l.Env)+len(add))
	for _, kv := range l.Env {
		if name, _, _ := strings.Cut(kv, "="); !override[name] {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}
