package session

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

// newSource makes the bridge source for a configured tool server.
func (s *Session) newSource(tc config.ToolConfig) bridge.Source {
	return newToolSource(tc, s.cfg.Harness.StopGrace.D(), s.sup, s.log)
}

// newToolSource makes the bridge source for a configured tool server (a
// session's, or CheckTools').
func newToolSource(tc config.ToolConfig, stopGrace time.Duration, sup *process.Supervisor, log *slog.Logger) bridge.Source {
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
	}, sup, log)
}

// openTools starts the sources of an episode, builds its catalog and, when
// there are tools to serve, a bridge with a fresh token.
func (s *Session) openTools(ctx context.Context, ep *episode) error {
	// A standby may be prepared while a reset runs: the persistent
	// sources start once, under startMu.
	s.startMu.Lock()
	if !s.started {
		for _, src := range s.sources {
			if err := src.Start(ctx); err != nil {
				s.startMu.Unlock()
				return fmt.Errorf("start tool source %s: %w", src.Name(), err)
			}
		}
		s.started = true
	}
	s.startMu.Unlock()
	for _, tc := range append(append([]config.ToolConfig(nil), s.perEpisode...), s.taskTools(ep)...) {
		src := s.newSource(tc)
		ep.sources = append(ep.sources, src)
		if err := src.Start(ctx); err != nil {
			return fmt.Errorf("start tool source %s: %w", src.Name(), err)
		}
	}
	all := append(append([]bridge.Source(nil), s.sources...), ep.sources...)
	if len(all) == 0 {
		return nil
	}
	cat, err := bridge.NewCatalog(ctx, all, bridge.CatalogOptions{
		Builtins: s.cfg.Harness.BuiltinTools,
		Expose:   s.cfg.Expose,
		Hide:     s.cfg.Hide,
	})
	if err != nil {
		return err
	}
	ep.catalog = cat
	for _, e := range cat.Served() {
		ep.tools = append(ep.tools, e.Served)
	}
	sort.Strings(ep.tools)
	if len(ep.tools) == 0 {
		return nil
	}
	srv, err := bridge.Serve(cat, bridge.ServerOptions{
		OnCall:   func(c bridge.CallStart) { s.onToolCall(ep, c) },
		OnResult: func(c bridge.CallEnd) { s.onToolResult(ep, c) },
		Logger:   ep.log,
		Listener: ep.door(doorMCP),
	})
	if err != nil {
		return fmt.Errorf("start tool bridge: %w", err)
	}
	ep.server = srv
	return nil
}

// injection describes the episode's bridge to the adapter, writing the
// standard MCP config file into the episode directory.
func (s *Session) injection(ep *episode) (*harness.MCPInjection, error) {
	if ep.server == nil {
		return nil, nil
	}
	inj := &harness.MCPInjection{
		ServerName: harness.DefaultMCPServerName,
		URL:        ep.server.URL(),
		Token:      ep.server.Token(),
		ConfigPath: filepath.Join(ep.dirs.root, "mcp.json"),
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
		return nil, fmt.Errorf("write MCP config: %w", err)
	}
	return inj, nil
}

// closeTools stops the bridge and the episode's own sources.
func (s *Session) closeTools(ctx context.Context, ep *episode) error {
	var errs []error
	if ep.server != nil {
		errs = append(errs, ep.server.Close(ctx))
		ep.server = nil
	}
	for _, src := range ep.sources {
		errs = append(errs, src.Close(ctx))
	}
	ep.sources = nil
	return errors.Join(errs...)
}

func (s *Session) onToolCall(ep *episode, c bridge.CallStart) {
	s.emit(ep, wire.New(wire.OriginBridge, &wire.ToolCall{
		ToolName:     c.Served,
		UpstreamName: c.Upstream,
		ToolSource:   c.Source,
		Arguments:    json.RawMessage(orEmptyObject(c.Arguments)),
		CallID:       c.ID,
	}))
}

func (s *Session) onToolResult(ep *episode, c bridge.CallEnd) {
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
	s.emit(ep, wire.New(wire.OriginBridge, r))
}

// callHiddenTool serves tool rubrics: it calls through the catalog, which
// reaches hidden tools the harness cannot see.
func (s *Session) callHiddenTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	s.mu.Lock()
	var cat *bridge.Catalog
	if s.ep != nil {
		cat = s.ep.catalog
	}
	s.mu.Unlock()
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

// orchestratorCatalog returns the running episode's catalog, or one built
// from the persistent tool sources when no episode runs (MCP actions work
// without reset).
func (s *Session) orchestratorCatalog(ctx context.Context) (*bridge.Catalog, error) {
	s.mu.Lock()
	if s.ep != nil && s.ep.catalog != nil && s.ep.active {
		cat := s.ep.catalog
		s.mu.Unlock()
		return cat, nil
	}
	s.mu.Unlock()
	if !s.claim() {
		return nil, ErrBusy
	}
	defer s.release()
	if !s.started {
		for _, src := range s.sources {
			if err := src.Start(ctx); err != nil {
				return nil, fmt.Errorf("start tool source %s: %w", src.Name(), err)
			}
		}
		s.started = true
	}
	return bridge.NewCatalog(ctx, s.sources, bridge.CatalogOptions{
		Builtins: s.cfg.Harness.BuiltinTools, Expose: s.cfg.Expose, Hide: s.cfg.Hide,
	})
}

// ListTools lists the environment's visible tools under their original
// names. Hidden tools (graders) are not listed.
func (s *Session) ListTools(ctx context.Context) ([]ToolInfo, error) {
	cat, err := s.orchestratorCatalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []ToolInfo
	for _, e := range cat.Served() {
		t := e.Tool
		out = append(out, ToolInfo{Name: e.Upstream, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations})
	}
	return out, nil
}

// CallTool calls a visible tool by its original or served name. A name no
// visible tool has is an error wrapping bridge.ErrUnknownTool.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	cat, err := s.orchestratorCatalog(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range cat.Served() {
		if e.Upstream == name || e.Served == name {
			return cat.Call(ctx, e.Served, args)
		}
	}
	return nil, fmt.Errorf("%w: %q", bridge.ErrUnknownTool, name)
}
