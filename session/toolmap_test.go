package session_test

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/mcptools"
)

// A mapped tool entry serves the same tool list in both modes: the
// simulation side from the test tools' stdio command, the production side
// from a streamable-HTTP server of the same tools, which only production
// episodes reach.
func TestToolMappingServesTheSameToolsInBothModes(t *testing.T) {
	srv, err := mcptools.NewServer(mcptools.Options{Only: []string{"add", "echo"}})
	if err != nil {
		t.Fatal(err)
	}
	h := server.NewStreamableHTTPServer(srv)
	var calls atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() }) // after the sessions (cleanups run last first)
	bin := testbin.Path(t, "testharness")
	var lists [][]string
	for _, mode := range []string{config.ModeSimulation, config.ModeProduction} {
		cfg := testConfig(t)
		cfg.Mode = mode
		cfg.Tools = []config.ToolConfig{{Name: "mail",
			Simulation: &config.ToolServer{Command: []string{bin, "tools", "--only", "add,echo"}},
			Production: &config.ToolServer{URL: "http://" + ln.Addr().String() + "/mcp"},
		}}
		s := newSession(t, cfg)
		before := calls.Load()
		obs := reset(t, s)
		lists = append(lists, obs.Metadata.InjectedTools)
		if got := responseText(t, s, `tool add {"a":2,"b":3}`); !strings.Contains(got, "add -> 5") {
			t.Errorf("%s: add says %q", mode, got)
		}
		reached := calls.Load() > before
		if reached != (mode == config.ModeProduction) {
			t.Errorf("%s: the production server reached: %v", mode, reached)
		}
	}
	if !slices.Equal(lists[0], lists[1]) || len(lists[0]) != 2 {
		t.Errorf("tools served: simulation %v, production %v", lists[0], lists[1])
	}
}
