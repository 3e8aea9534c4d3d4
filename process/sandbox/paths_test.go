package sandbox

import (
	"reflect"
	"testing"
)

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

func TestInsidePath(t *testing.T) {
	maps := episodeConfig().pathMaps()
	for in, want := range map[string]string{
		"/h/s1/ep-1":                    "/run/e",
		"/h/s1/ep-1/":                   "/run/e",
		"/h/s1/ep-1/mcp.json":           "/run/e/mcp.json",
		"/h/s1/ep-1/workspace":          "/app", // the workspace's last bind: its WORKDIR
		"/h/s1/ep-1/workspace/a/b":      "/app/a/b",
		"/h/s1/ep-1/home/.claude":       "/run/e/home/.claude",
		"/h/s1/ep-1/tmp":                "/run/e/tmp",
		"/h/s1/ep-1/logs/agent":         "/logs/agent",
		"/h/s1/ep-10":                   "/h/s1/ep-10", // another episode: not below the bind
		"/h/s1":                         "/h/s1",
		"/opt/bin/agent":                "/opt/bin/agent",
		"relative/h/s1/ep-1":            "relative/h/s1/ep-1",
		"/h/s1/ep-1/../ep-2/workspace":  "/h/s1/ep-1/../ep-2/workspace", // cleaned: /h/s1/ep-2/workspace, not below
		"/h/s1/ep-1/home/../workspace/": "/app",
	} {
		if got := insidePath(maps, in); got != want {
			t.Errorf("insidePath(%q) = %q, want %q", in, got, want)
		}
	}
	// Nothing moved: no table, every path as given.
	if m := (&Config{Workspace: "/w", Home: "/h", Binds: []Bind{{Src: "/opt"}}}).pathMaps(); m != nil {
		t.Errorf("binds at their own paths gave a table: %v", m)
	}
}

func TestTranslate(t *testing.T) {
	maps := episodeConfig().pathMaps()
	for in, want := range map[string]string{
		"/h/s1/ep-1/home": "/run/e/home",
		"--mcp-config=/h/s1/ep-1/home/.harnessd/c.json":  "--mcp-config=/run/e/home/.harnessd/c.json",
		"/h/s1/ep-1/home/bin:/usr/bin:/h/s1/ep-1/tmp/x":  "/run/e/home/bin:/usr/bin:/run/e/tmp/x",
		`{"dir":"/h/s1/ep-1/workspace","n":1}`:           `{"dir":"/app","n":1}`,
		"cd /h/s1/ep-1/workspace && ls /h/s1/ep-1/logs/": "cd /app && ls /logs/",
		"/h/s1/ep-10/home":                               "/h/s1/ep-10/home",
		"/x/h/s1/ep-1/home":                              "/x/h/s1/ep-1/home",
		"a/h/s1/ep-1":                                    "a/h/s1/ep-1",
		"/h/s1/ep-1.bak":                                 "/h/s1/ep-1.bak",
		"/h/s1/ep-1_":                                    "/h/s1/ep-1_",
		"no path here":                                   "no path here",
		"/opt/bin/agent --flag":                          "/opt/bin/agent --flag",
		"http://127.0.0.1:9/h/s1/ep-1":                   "http://127.0.0.1:9/h/s1/ep-1", // a URL's path is the URL's
		"":                                               "",
	} {
		if got := translate(maps, in); got != want {
			t.Errorf("translate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInsideCommand(t *testing.T) {
	maps := episodeConfig().pathMaps()
	c := Command{
		Path: "/h/s1/ep-1/workspace/run.sh",
		Args: []string{"--mcp-config", "/h/s1/ep-1/home/.harnessd/c.json", "message about /h/s1/ep-1"},
		Env:  []string{"HOME=/h/s1/ep-1/home", "TMPDIR=/h/s1/ep-1/tmp", "PATH=/opt/bin:/usr/bin", "ODD"},
		Dir:  "/h/s1/ep-1/workspace",
	}
	got := insideCommand(maps, c)
	want := Command{
		Path: "/app/run.sh",
		Args: []string{"--mcp-config", "/run/e/home/.harnessd/c.json", "message about /run/e"},
		Env:  []string{"HOME=/run/e/home", "TMPDIR=/run/e/tmp", "PATH=/opt/bin:/usr/bin", "ODD"},
		Dir:  "/app",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("insideCommand:\n got %+v\nwant %+v", got, want)
	}
	if c.Args[1] != "/h/s1/ep-1/home/.harnessd/c.json" || c.Env[0] != "HOME=/h/s1/ep-1/home" {
		t.Errorf("the caller's command was changed: %+v", c)
	}
}
