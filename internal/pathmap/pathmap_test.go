package pathmap

import (
	"slices"
	"testing"
)

// episodeTable is a sandboxed episode's layout: its directory moved to a
// fixed path, the workspace also at a task's WORKDIR (its last entry
// wins), a binary directory at its own path.
func episodeTable() Table {
	return New([]Dir{
		{"/h/s1/ep-1/workspace", "/run/e/workspace"}, {"/h/s1/ep-1/workspace", "/app"},
		{"/h/s1/ep-1/home", "/run/e/home"}, {"/h/s1/ep-1", "/run/e"}, {"/h/s1/ep-1/tmp", "/run/e/tmp"},
		{"/opt/bin", "/opt/bin"}, {"/h/s1/ep-1/logs", "/logs"},
	})
}

func TestPath(t *testing.T) {
	maps := episodeTable()
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
		if got := maps.Path(in); got != want {
			t.Errorf("Path(%q) = %q, want %q", in, got, want)
		}
	}
	// Nothing moved: no table, every path as given.
	if m := New([]Dir{{"/w", "/w"}, {"/h", "/h/"}, {"/opt", "/opt"}}); m != nil {
		t.Errorf("directories at their own paths gave a table: %v", m)
	}
}

func TestRewrite(t *testing.T) {
	maps := episodeTable()
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
		if got := maps.Rewrite(in); got != want {
			t.Errorf("Rewrite(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStringsAndEnviron(t *testing.T) {
	m := episodeTable()
	args := []string{"--mcp-config", "/h/s1/ep-1/home/c.json", "about /h/s1/ep-1"}
	env := []string{"HOME=/h/s1/ep-1/home", "PATH=/opt/bin:/usr/bin", "ODD", "X=/h/s1/ep-1=/h/s1/ep-1"}
	gotA, gotE := m.Strings(args), m.Environ(env)
	wantA := []string{"--mcp-config", "/run/e/home/c.json", "about /run/e"}
	wantE := []string{"HOME=/run/e/home", "PATH=/opt/bin:/usr/bin", "ODD", "X=/run/e=/run/e"}
	if !slices.Equal(gotA, wantA) || !slices.Equal(gotE, wantE) {
		t.Errorf("Strings %q, Environ %q; want %q, %q", gotA, gotE, wantA, wantE)
	}
	if args[1] != "/h/s1/ep-1/home/c.json" || env[0] != "HOME=/h/s1/ep-1/home" {
		t.Errorf("the caller's slices were changed: %q %q", args, env)
	}
	if m.Strings(nil) != nil || m.Environ(nil) != nil {
		t.Error("nil in, not nil out")
	}
}
