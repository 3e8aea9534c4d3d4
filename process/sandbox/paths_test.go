package sandbox

import "testing"

// The translation table of a sandbox with an episode's layout: the
// episode's directory moved to a fixed path, the workspace also at a task's
// WORKDIR, a binary directory at its own path.
func episodeConfig() *Config {
	return &Config{
		Workspace: "/h/s1/ep-1/workspace", WorkspaceDst: "/run/e/workspace", WorkspaceAt: "/app",
		Home: "/h/s1/ep-1/home", HomeDst: "/run/e/home",
		Binds: []Bind{
			{Src: "/h/s1/ep-1", Dst: "/run/e"},
			{Src: "/h/s1/ep-1/tmp", Dst: "/run/e/tmp", Writable: true},
			{Src: "/opt/bin"},
			{Src: "/h/s1/ep-1/logs", Dst: "/logs"},
		},
	}
}

// A Config's table: the workspace's last bind (its WORKDIR) wins, HOME and
// the extra binds translate to their destinations, a bind at its own path
// and paths outside every bind stay.
func TestPathMapsOfAConfig(t *testing.T) {
	maps := episodeConfig().pathMaps()
	for in, want := range map[string]string{
		"/h/s1/ep-1/workspace/a": "/app/a", "/h/s1/ep-1/home/.claude": "/run/e/home/.claude",
		"/h/s1/ep-1/mcp.json": "/run/e/mcp.json", "/h/s1/ep-1/tmp": "/run/e/tmp", "/h/s1/ep-1/logs/x": "/logs/x",
		"/opt/bin/agent": "/opt/bin/agent", "/h/s1/ep-10": "/h/s1/ep-10",
	} {
		if got := maps.Path(in); got != want {
			t.Errorf("Path(%q) = %q, want %q", in, got, want)
		}
	}
	if m := (&Config{Workspace: "/w", Home: "/h", Binds: []Bind{{Src: "/opt"}}}).pathMaps(); m != nil {
		t.Errorf("binds at their own paths gave a table: %v", m)
	}
}
