package mcptools

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// DefaultName is the server name announced in the initialize result.
const DefaultName = "testharness-tools"

// Options select and shape the served tools.
type Options struct {
	// Name is the server name announced to clients; empty means DefaultName.
	Name string
	// Only, when not empty, serves just these tools (by original name).
	Only []string
	// Omit removes these tools (by original name).
	Omit []string
	// Rename serves a tool under another name: original name -> served name.
	Rename map[string]string
	// PageSize paginates tools/list with this many tools per page; 0 means
	// one page.
	PageSize int
	// Score is what grade reports when it is given no expected answer.
	Score float64
	// Exit ends the process for the crash tool; nil means os.Exit.
	Exit func(code int)
	// Stderr receives the crash tool's last words; nil means os.Stderr.
	Stderr io.Writer
	// Logger, if set, receives the MCP server's request log.
	Logger *slog.Logger
}

// Names lists every tool this package can serve, sorted.
func Names() []string {
	names := make([]string, 0, len(catalog))
	for n := range catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// state is the per-server (per-process, when run by `testharness tools`)
// bookkeeping behind count and stats.
type state struct {
	opts      Options
	count     atomic.Int64
	cancelled atomic.Int64
	mu        sync.Mutex
	calls     map[string]int
}

func (st *state) record(name string) {
	st.mu.Lock()
	st.calls[name]++
	st.mu.Unlock()
}

// NewServer builds an MCP server with the selected tools. It fails on an
// unknown tool name in Only, Omit or Rename.
func NewServer(o Options) (*server.MCPServer, error) {
	for _, list := range [][]string{o.Only, o.Omit} {
		for _, n := range list {
			if _, ok := catalog[n]; !ok {
				return nil, fmt.Errorf("unknown tool %q (have %s)", n, strings.Join(Names(), ", "))
			}
		}
	}
	for n := range o.Rename {
		if _, ok := catalog[n]; !ok {
			return nil, fmt.Errorf("cannot rename unknown tool %q", n)
		}
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Exit == nil {
		o.Exit = os.Exit
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	opts := []server.ServerOption{server.WithToolCapabilities(false), server.WithRecovery()}
	if o.PageSize > 0 {
		opts = append(opts, server.WithPaginationLimit(o.PageSize))
	}
	if o.Logger != nil {
		opts = append(opts, server.WithLogger(o.Logger))
	}
	s := server.NewMCPServer(o.Name, "1", opts...)
	st := &state{opts: o, calls: map[string]int{}}
	var tools []server.ServerTool
	for _, name := range Names() {
		if len(o.Only) > 0 && !slices.Contains(o.Only, name) {
			continue
		}
		if slices.Contains(o.Omit, name) {
			continue
		}
		def := catalog[name]
		tool := def.tool()
		if served, ok := o.Rename[name]; ok && served != "" {
			tool.Name = served
		}
		handler := def.handler(st)
		tools = append(tools, server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st.record(name)
			return handler(ctx, req)
		}})
	}
	s.AddTools(tools...)
	return s, nil
}

// Serve runs the tool server over in and out (stdio) until in reaches EOF or
// ctx ends.
func Serve(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	s, err := NewServer(o)
	if err != nil {
		return err
	}
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(log.New(o.stderr(), "testharness tools: ", 0))
	return stdio.Listen(ctx, in, out)
}

func (o Options) stderr() io.Writer {
	if o.Stderr != nil {
		return o.Stderr
	}
	return os.Stderr
}
