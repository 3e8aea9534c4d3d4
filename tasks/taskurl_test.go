package tasks_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/testharness/mcptools"
)

// loopbackMCP serves the test tools' add over streamable HTTP on
// 127.0.0.1 and counts the requests that reach it.
func loopbackMCP(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	srv, err := mcptools.NewServer(mcptools.Options{Only: []string{"add"}})
	if err != nil {
		t.Fatal(err)
	}
	h := server.NewStreamableHTTPServer(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hits = new(atomic.Int64)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() }) // after the sessions (cleanups run last first)
	return "http://" + ln.Addr().String() + "/mcp", hits
}

// urlTask writes a taskset of one task, "side", whose mcp_servers entry is
// url (none when url is empty).
func urlTask(t *testing.T, url string) string {
	t.Helper()
	set := filepath.Join(t.TempDir(), "set")
	task := filepath.Join(set, "side")
	os.MkdirAll(filepath.Join(task, "tests"), 0o755)
	toml := ""
	if url != "" {
		toml = "[environment]\nmcp_servers = [{ name = \"calc\", transport = \"streamable-http\", url = \"" + url + "\" }]\n"
	}
	os.WriteFile(filepath.Join(task, "task.toml"), []byte(toml), 0o644)
	os.WriteFile(filepath.Join(task, "instruction.md"), []byte("add"), 0o644)
	os.WriteFile(filepath.Join(task, "tests", "test.sh"), []byte("echo 1 > /logs/verifier/reward.txt\n"), 0o755)
	return set
}

// A task dataset is untrusted and the daemon dials its mcp_servers url
// from the host: a task naming a loopback server (the daemon's own API, a
// local service, as good as cloud metadata) is refused before any request
// reaches it. Controls: the same server is reached as the operator's
// tools: entry, and as the task's with network.task_mcp_private.
func TestTaskMCPURLNeverReachesLoopback(t *testing.T) {
	url, hits := loopbackMCP(t)
	s := shellSession(t, func(c *config.Config) { c.Tasks = tasks.Source{Dir: urlTask(t, url)} })
	_, err := s.Reset(ctxFor(t), session.ResetOptions{TaskID: "side"})
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	for _, want := range []string{host, "a loopback address", "network.task_mcp_private"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("reset with a task's loopback MCP url: %v, want an error naming %q", err, want)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the task's loopback MCP server got %d requests, want none", n)
	}
	add := func(s *session.Session, name string) {
		t.Helper()
		if _, err := s.Reset(ctxFor(t), session.ResetOptions{TaskID: "side"}); err != nil {
			t.Fatalf("%s: reset: %v", name, err)
		}
		before := hits.Load()
		res, err := s.CallTool(ctxFor(t), "add", json.RawMessage(`{"a":2,"b":3}`))
		if b, _ := json.Marshal(res); err != nil || !strings.Contains(string(b), "5") || hits.Load() == before {
			t.Errorf("%s: add = %s, %v; the server reached: %v", name, b, err, hits.Load() > before)
		}
	}
	op := shellSession(t, func(c *config.Config) {
		c.Tasks = tasks.Source{Dir: urlTask(t, "")}
		c.Tools = []config.ToolConfig{{Name: "calc", URL: url, PerEpisode: true}}
	})
	add(op, "control: the operator's tools: entry")
	opt := shellSession(t, func(c *config.Config) {
		c.Tasks = tasks.Source{Dir: urlTask(t, url)}
		c.Network.TaskMCPPrivate = true
	})
	add(opt, "control: the task's url with network.task_mcp_private")
}
