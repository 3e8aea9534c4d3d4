package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/mcptools"
	"github.com/harnessd/harnessd/wire"
)

// mcpHTTP serves the test tools over streamable HTTP on 127.0.0.1 (a
// production tool server) and counts its requests.
func mcpHTTP(t *testing.T, o mcptools.Options) (string, *atomic.Int64) {
	t.Helper()
	srv, err := mcptools.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	h := server.NewStreamableHTTPServer(srv)
	var hits atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp", &hits
}

// mappedConfig is an environment whose "mail" tools come from the test
// tool server's stdio command in simulation and from url in production.
func mappedConfig(t *testing.T, simOnly, url string) string {
	th := testbin.Path(t, "testharness")
	return writeConfig(t, t.TempDir(), "env.yaml", `
harness:
  command: [`+th+`, agent]
isolation: process
tools:
  - name: mail
    simulation: {command: [`+th+`, tools, --only, "`+simOnly+`"]}
    production: {url: "`+url+`"}
`)
}

// validate shows a mapping whose two servers serve the same tools, and the
// side the mode selects.
func TestValidateShowsAToolMapping(t *testing.T) {
	url, hits := mcpHTTP(t, mcptools.Options{Only: []string{"add", "echo"}})
	cfg := mappedConfig(t, "add,echo", url)
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, `tool mapping "mail": simulation command `) || !strings.Contains(out, "production url "+url) ||
		!strings.Contains(out, "mode simulation serves simulation") {
		t.Errorf("validate does not show the mapping:\n%s", out)
	}
	t.Logf("validate:\n%s", out)
	if hits.Load() == 0 {
		t.Error("validate never listed the production server's tools")
	}
}

// A mapped entry whose production side is out of reach (a training
// cluster without the production service) is valid in simulation mode:
// validate warns, as serve and run do, says the two were not compared, and
// exits 0. The control: the same file in production mode, which serves
// that side, is refused.
func TestValidateWarnsOfAnUnreachableSideItDoesNotServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // nothing listens there now
	cfg := mappedConfig(t, "add,echo", url)
	out, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitOK || !strings.Contains(errOut, "warning: tools[0] (tool server \"mail\"): production server") ||
		!strings.Contains(out, "mode simulation serves simulation (not compared: a side could not be reached)") {
		t.Fatalf("simulation mode: exit %d\n%s%s", code, out, errOut)
	}
	// Production mode, as serve would select it: by --mode, by
	// $OPENENV_MODE, by the file's mode:. The served side out of reach is
	// a problem, and not also a warning.
	production := func(how string, env []string, args ...string) {
		t.Helper()
		out, errOut, code := harnessd(t, env, append([]string{"validate"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "does not start") || strings.Contains(errOut, "warning:") {
			t.Errorf("production mode by %s: exit %d, want %d with the served side refused, no warning\n%s%s", how, code, exitUsage, out, errOut)
		}
	}
	production("--mode", nil, "--mode", "production", cfg)
	production("$OPENENV_MODE", []string{"OPENENV_MODE=production"}, cfg)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "mode: production\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	production("mode:", nil, cfg)
}

// A schema difference between the two servers is refused, by validate and
// at serve's start, naming the tool and the field; a tool only one side
// serves likewise.
func TestToolMappingSchemaMismatchIsRefused(t *testing.T) {
	// Production serves add's schema under the name echo.
	url, _ := mcpHTTP(t, mcptools.Options{Only: []string{"add"}, Rename: map[string]string{"add": "echo"}})
	cfg := mappedConfig(t, "echo", url)
	_, errOut, code := harnessd(t, nil, "validate", cfg)
	if code != exitUsage || !strings.Contains(errOut, `tool "echo": field inputSchema.properties.a differs`) {
		t.Fatalf("validate: exit %d, stderr:\n%s", code, errOut)
	}
	t.Logf("validate:\n%s", errOut)
	_, errOut, code = harnessd(t, nil, "serve", "--config", cfg, "--listen", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(errOut, "refusing to start") || !strings.Contains(errOut, `tool "echo": field inputSchema.properties`) {
		t.Fatalf("serve: exit %d, stderr:\n%s", code, errOut)
	}
	// A tool missing from production.
	url2, _ := mcpHTTP(t, mcptools.Options{Only: []string{"add"}})
	_, errOut, code = harnessd(t, nil, "validate", mappedConfig(t, "add,echo", url2))
	if code != exitUsage || !strings.Contains(errOut, `tool "echo": served by simulation only, missing from production`) {
		t.Fatalf("validate (missing tool): exit %d, stderr:\n%s", code, errOut)
	}
}

// harnessd run with a simulated user and no -m plays the whole episode:
// five turns, each written by the user, to the user's done.
func TestRunPlaysASimulatedUserToDone(t *testing.T) {
	th := testbin.Path(t, "testharness")
	cfg := writeConfig(t, t.TempDir(), "env.yaml", `
harness:
  command: [`+th+`, agent]
isolation: process
user:
  command: [`+th+`, user, --turns, "5", --expect, "turn %d"]
`)
	out, errOut, code := harnessd(t, nil, "run", "--config", cfg)
	if strings.Contains(errOut, "start the sandbox of user") {
		testbin.Missing(t, "the simulated user runs in a sandbox: %s", errOut)
	}
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var o wire.Observation
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !o.Done || !o.Metadata.UserDone || o.Metadata.TurnNumber != 5 || o.Metadata.UserReason != "satisfied after 5 turns" {
		t.Fatalf("final observation: %+v\n%s", o.Metadata, errOut)
	}
	if n := strings.Count(errOut, "turn "); n < 5 {
		t.Errorf("stderr shows %d turns:\n%s", n, errOut)
	}
	// With a first -m the user writes the rest.
	out, errOut, code = harnessd(t, nil, "run", "--config", cfg, "-m", "say turn 1")
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != exitOK || o.Metadata.TurnNumber != 5 || !o.Metadata.UserDone {
		t.Fatalf("run -m: exit %d %+v (%v)\n%s", code, o.Metadata, err, errOut)
	}
}
