package episode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/bearer"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// newSource makes the bridge source for a configured tool server of the
// session (ep nil) or of episode ep: a stdio server runs in a side
// sandbox of its own (side.go) unless it runs on the host (toolOnHost).
// workspaceDir marks a task's server (run from the workspace); a task's
// url is dialled under the address guard (taskurl.go).
func (e *Env) newSource(ep *Episode, tc config.ToolConfig, workspaceDir bool) bridge.Source {
	if workspaceDir && tc.URL != "" {
		return e.taskHTTPSource(tc)
	}
	if !e.sandboxedTool(tc) {
		if len(tc.Command) > 0 && tc.Isolation == config.ToolIsolationHost {
			e.Logger.Warn("side door: a tool server runs on the host as the daemon's user (isolation: host)", "tool", tc.Name)
		}
		return NewToolSource(tc, e.Config.Harness.StopGrace.D(), e.Supervisor, e.Logger, nil)
	}
	if workspaceDir && ep != nil {
		tc.Dir = ep.workspaceInside()
	}
	l := ep.takeSideAhead(tc.Name, workspaceDir)
	if l == nil {
		l = &sideLauncher{e: e, ep: ep, sp: e.toolSide(ep, tc, workspaceDir)}
	}
	return &sandboxedSource{Source: NewToolSource(tc, e.Config.Harness.StopGrace.D(), e.Supervisor, e.Logger, l), l: l}
}

// sandboxedTool reports a tool entry whose stdio server runs in a side
// sandbox.
func (e *Env) sandboxedTool(tc config.ToolConfig) bool {
	return len(tc.Command) > 0 && tc.URL == "" && !e.toolOnHost(tc)
}

// toolSide describes the side sandbox of tool entry tc for ep (nil: a
// session-wide server); workspaceDir says it runs in the workspace.
func (e *Env) toolSide(ep *Episode, tc config.ToolConfig, workspaceDir bool) sideSpec {
	sp := sideSpec{name: "tools-" + tc.Name, command: tc.Command, network: tc.Network}
	if ep != nil {
		sp.workspace, sp.writable = true, true
	}
	if !(workspaceDir && ep != nil) && tc.Dir != "" {
		sp.dirs = append(sp.dirs, tc.Dir)
	}
	return sp
}

// startSidesAhead starts the side sandboxes of the configured per-episode
// tool servers with the episode's own sandbox, where their configuration
// is known already (no taskset: a task's limits and WORKDIR shape it), so
// that a reset from a spare runs each server in a sandbox made while the
// previous episode ran, as the harness is. The servers themselves start
// with the episode's doors, after the task's files are in the workspace
// (bound, so they see them). A sandbox that fails to start here is left to
// openEpisodeSources, which reports it.
func (ep *Episode) startSidesAhead(ctx context.Context) error {
	e := ep.env
	if e.Config.Taskset() != nil || ep.Task() != nil {
		return nil
	}
	for _, tc := range e.perEpisode {
		if !e.sandboxedTool(tc) {
			continue
		}
		l := &sideLauncher{e: e, ep: ep, sp: e.toolSide(ep, tc, false)}
		if _, err := l.sandbox(ctx); err != nil {
			continue
		}
		if ep.sidesAhead == nil {
			ep.sidesAhead = map[string]*sideLauncher{}
		}
		ep.sidesAhead[tc.Name] = l
		ep.undo.push(ResourceToolSandbox, func(context.Context) error { return l.Close() })
	}
	return nil
}

// takeSideAhead hands over the side sandbox started ahead for the
// configured per-episode tool server name (never a task's: workspaceDir),
// or nil.
func (ep *Episode) takeSideAhead(name string, workspaceDir bool) *sideLauncher {
	if ep == nil || workspaceDir {
		return nil
	}
	l := ep.sidesAhead[name]
	delete(ep.sidesAhead, name)
	return l
}

// sandboxedSource is a stdio source whose side sandbox closes with it.
type sandboxedSource struct {
	bridge.Source
	l *sideLauncher
}

// Close stops the server, then its sandbox.
func (s *sandboxedSource) Close(ctx context.Context) error {
	return errors.Join(s.Source.Close(ctx), s.l.Close())
}

// NewToolSource makes the bridge source for a configured tool server (an
// episode's, or preflight.CheckTools'); a non-nil launcher runs a stdio
// server there.
func NewToolSource(tc config.ToolConfig, stopGrace time.Duration, sup *process.Supervisor, log *slog.Logger, l process.Launcher) bridge.Source {
	if tc.URL != "" {
		return bridge.NewHTTPSource(bridge.HTTPSpec{
			Name: tc.Name, URL: tc.URL, Headers: tc.Headers, CallTimeout: tc.CallTimeout.D(),
		}, log)
	}
	return bridge.NewStdioSource(bridge.StdioSpec{
		Name:        tc.Name,
		Command:     tc.Command,
		Env:         process.DefaultEnviron(tc.Env),
		Dir:         tc.Dir,
		CallTimeout: tc.CallTimeout.D(),
		StopGrace:   stopGrace,
		Launcher:    l,
	}, sup, log)
}

// startPersistent starts the session's persistent tool sources, once.
func (e *Env) startPersistent(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return nil
	}
	for _, src := range e.Sources {
		if err := src.Start(ctx); err != nil {
			return fmt.Errorf("start tool source %s: %w", src.Name(), err)
		}
	}
	e.started = true
	return nil
}

// catalogOptions are the configuration's catalog rules.
func (e *Env) catalogOptions() bridge.CatalogOptions {
	c := e.Config
	return bridge.CatalogOptions{Builtins: c.Harness.BuiltinTools, Expose: c.Expose, Hide: c.Hide}
}

// openTools starts the sources of an episode, builds its catalog and, when
// there are tools to serve, a bridge with a fresh token. Without one the
// sandbox's bridge door is closed, so a connection to it is refused rather
// than left hanging.
func (ep *Episode) openTools(ctx context.Context) error {
	e := ep.env
	if err := e.startPersistent(ctx); err != nil {
		return err
	}
	if err := ep.openEpisodeSources(ctx); err != nil {
		return err
	}
	all := append(append([]bridge.Source(nil), e.Sources...), ep.sources...)
	if len(all) > 0 {
		cat, err := bridge.NewCatalog(ctx, all, e.catalogOptions())
		if err != nil {
			return err
		}
		ep.catalog = cat
		for _, entry := range cat.Served() {
			ep.tools = append(ep.tools, entry.Served)
		}
		sort.Strings(ep.tools)
	}
	if len(ep.tools) == 0 {
		if l := ep.door(doorMCP); l != nil {
			l.Close()
		}
		return nil
	}
	srv, err := bridge.Serve(ep.catalog, bridge.ServerOptions{
		OnCall:       ep.onToolCall,
		OnResult:     ep.onToolResult,
		Logger:       ep.Log(),
		Listener:     ep.door(doorMCP),
		Record:       true,
		Replay:       ep.fork.toolReplay,
		Inherit:      ep.fork.toolInherit,
		OnDivergence: ep.fork.divergence,
	})
	if err != nil {
		return fmt.Errorf("start tool bridge: %w", err)
	}
	ep.server = srv
	ep.undo.push(ResourceBridge, srv.Close)
	return nil
}

// openEpisodeSources starts the per-episode tool sources: the configured
// ones and the task's.
func (ep *Episode) openEpisodeSources(ctx context.Context) error {
	e := ep.env
	tcs := append([]config.ToolConfig(nil), e.perEpisode...)
	ntask := len(tcs)
	tcs = append(tcs, taskTools(ep.Task(), ep.dirs.Workspace)...)
	if len(tcs) == 0 {
		return nil
	}
	ep.undo.push(ResourceToolSources, func(ctx context.Context) error {
		var errs []error
		for _, src := range ep.sources {
			errs = append(errs, src.Close(ctx))
		}
		return errors.Join(errs...)
	})
	for i, tc := range tcs {
		// A task's servers run from the workspace (the path the harness
		// sees, in their sandbox).
		src := e.newSource(ep, tc, i >= ntask)
		ep.sources = append(ep.sources, src)
		if err := src.Start(ctx); err != nil {
			return fmt.Errorf("start tool source %s: %w", src.Name(), err)
		}
	}
	return nil
}

// writeInjection describes the episode's bridge to the adapter, writing
// the standard MCP config file into the episode directory.
func (ep *Episode) writeInjection() error {
	if ep.server == nil {
		return nil
	}
	inj := &harness.MCPInjection{
		ServerName: harness.DefaultMCPServerName,
		URL:        ep.server.URL(),
		Token:      ep.server.Token(),
		ConfigPath: filepath.Join(ep.dirs.Root, "mcp.json"),
		Tools:      append([]string(nil), ep.tools...),
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		inj.ServerName: map[string]any{
			"type":    "http",
			"url":     inj.URL,
			"headers": map[string]string{bearer.HeaderName: bearer.Header(inj.Token)},
		},
	}}, "", "  ")
	if err := os.WriteFile(inj.ConfigPath, b, 0o600); err != nil {
		return fmt.Errorf("write MCP config: %w", err)
	}
	ep.injection = inj
	return nil
}

func (ep *Episode) onToolCall(c bridge.CallStart) {
	ep.emit(wire.New(wire.OriginBridge, &wire.ToolCall{
		ToolName:     c.Served,
		UpstreamName: c.Upstream,
		ToolSource:   c.Source,
		Arguments:    json.RawMessage(orEmptyObject(c.Arguments)),
		CallID:       c.ID,
	}))
}

func (ep *Episode) onToolResult(c bridge.CallEnd) {
	ms := float64(c.Duration.Microseconds()) / 1000
	r := &wire.ToolResult{
		ToolName:     c.Served,
		UpstreamName: c.Upstream,
		ToolSource:   c.Source,
		CallID:       c.ID,
		DurationMS:   &ms,
	}
	switch {
	case c.Err != nil:
		msg := c.Err.Error()
		r.Error = &msg
	case c.Result != nil:
		text := resultText(c.Result)
		r.Result = text
		if c.Result.IsError {
			r.Error = &text
		}
		if c.Result.StructuredContent != nil {
			r.StructuredContent = c.Result.StructuredContent
		}
	}
	ep.emit(wire.New(wire.OriginBridge, r))
}

// CallHiddenTool serves tool rubrics: it calls through the episode's
// catalog, which reaches hidden tools the harness cannot see, and returns
// the result's text.
func (ep *Episode) CallHiddenTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	var cat *bridge.Catalog
	if ep != nil {
		cat = ep.catalog
	}
	if cat == nil {
		return "", errors.New("no tools are configured")
	}
	res, err := cat.Call(ctx, name, args)
	if err != nil {
		return "", err
	}
	text := resultText(res)
	if res.IsError {
		return text, fmt.Errorf("tool reported an error: %s", text)
	}
	return text, nil
}

// resultText joins the text content of a tool result.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func orEmptyObject(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

// ToolInfo is a tool as the orchestrator sees it through OpenEnv's /mcp
// route: its original (upstream) name and its schemas verbatim.
type ToolInfo struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Catalog builds a catalog from the persistent tool sources alone,
// starting them if no episode has (the orchestrator's MCP actions work
// without a reset).
func (e *Env) Catalog(ctx context.Context) (*bridge.Catalog, error) {
	if err := e.startPersistent(ctx); err != nil {
		return nil, err
	}
	return bridge.NewCatalog(ctx, e.Sources, e.catalogOptions())
}

// ToolList lists a catalog's visible tools under their original names.
// Hidden tools (graders) are not listed.
func ToolList(cat *bridge.Catalog) []ToolInfo {
	var out []ToolInfo
	for _, e := range cat.Served() {
		t := e.Tool
		out = append(out, ToolInfo{Name: e.Upstream, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
	}
	return out
}

// CallVisible calls a visible tool of cat by its original or served name.
// A name no visible tool has is an error wrapping bridge.ErrUnknownTool.
func CallVisible(ctx context.Context, cat *bridge.Catalog, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	for _, e := range cat.Served() {
		if e.Upstream == name || e.Served == name {
			return cat.Call(ctx, e.Served, args)
		}
	}
	return nil, fmt.Errorf("%w: %q", bridge.ErrUnknownTool, name)
}
