package episode

import (
	"os"
	"strings"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/environ"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/tasks"
)

// Launch describes the episode to an adapter: the harness command, its
// directories, its environment (the allowlisted daemon variables, the
// configured ones, HOME and TMPDIR, the egress proxy, the task's ENV, the
// model key's variable taken out), the MCP injection, the model gateway,
// and the sandbox's launcher. Call it on an episode at LevelDoors.
func (ep *Episode) Launch() *harness.Launch {
	e := ep.env
	h := &e.Config.Harness
	set := map[string]string{}
	for k, v := range h.Env {
		set[k] = v
	}
	set["HOME"] = ep.dirs.Home
	set["TMPDIR"] = ep.dirs.Tmp
	if ep.egress != nil {
		for _, kv := range egress.Environ(ep.egressAddr) {
			k, v, _ := strings.Cut(kv, "=")
			set[k] = v
		}
	}
	allow := append(append([]string(nil), process.DefaultEnvAllowlist...), h.PassEnv...)
	l := &harness.Launch{
		EpisodeID:      ep.ID(),
		Command:        h.Command,
		Workspace:      ep.dirs.Workspace,
		Home:           ep.dirs.Home,
		Env:            process.Environ(os.Environ(), allow, set),
		MCP:            ep.injection,
		Options:        h.Options,
		StartupTimeout: h.StartupTimeout.D(),
		StopGrace:      h.StopGrace.D(),
		MaxLineBytes:   int(h.MaxLineBytes),
		OutputLimit:    int64(e.Config.Episode.OutputLimit),
		Supervisor:     e.Supervisor,
		Logger:         ep.Log(),
	}
	if ep.sandbox != nil {
		// The harness's paths inside are fixed (SandboxDir): the working
		// directory is given as the harness sees it; the host paths of
		// HOME, TMPDIR, the MCP config and whatever an adapter builds from
		// Workspace and Home are translated by the sandbox's launcher.
		l.Launcher = ep.sandbox.Launcher()
		l.WorkDir = ep.workspaceInside()
	}
	if t := ep.Task(); t != nil {
		for _, kv := range t.Env {
			l.Env = environ.Set(l.Env, kv)
		}
	}
	ep.modelLaunch(l)
	return l
}

// taskTools maps a task's mcp_servers onto per-episode tool sources run
// from the workspace: stdio servers by command, streamable-HTTP ones by
// URL (SSE is not served; the task's warnings say so).
func taskTools(t *tasks.Task, workspace string) []config.ToolConfig {
	if t == nil {
		return nil
	}
	var out []config.ToolConfig
	for _, m := range t.MCPServers {
		tc := config.ToolConfig{Name: "task-" + m.Name, CallTimeout: units.Duration(config.DefaultToolTimeout), PerEpisode: true, Dir: workspace}
		switch {
		case m.Command != "" && (m.Transport == "" || m.Transport == "stdio"):
			tc.Command = append([]string{m.Command}, m.Args...)
		case m.URL != "" && (m.Transport == "streamable-http" || m.Transport == "http"):
			tc.URL = m.URL
		default:
			continue
		}
		out = append(out, tc)
	}
	return out
}
