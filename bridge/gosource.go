package bridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// GoTool is a tool implemented in Go, served in-process.
type GoTool struct {
	// Tool describes the tool (ToolFromMCP converts an mcp-go definition).
	Tool Tool
	// Handler serves a call. args are the raw JSON arguments (possibly
	// empty). It should honour ctx; ReportProgress reports progress.
	Handler func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error)
}

// goSource serves GoTools.
type goSource struct {
	name   string
	tools  []Tool
	byName map[string]GoTool
}

// NewGoSource returns a Source of in-process tools. Start, Restart and Close
// do nothing. A handler that panics fails its call with an error; a handler
// that ignores ctx is abandoned when ctx ends (its goroutine finishes on its
// own).
func NewGoSource(name string, tools ...GoTool) Source {
	s := &goSource{name: name, byName: make(map[string]GoTool, len(tools))}
	for _, t := range tools {
		s.tools = append(s.tools, t.Tool)
		if _, dup := s.byName[t.Tool.Name]; !dup {
			s.byName[t.Tool.Name] = t
		}
	}
	return s
}

// Name implements Source.
func (s *goSource) Name() string { return s.name }

// Start implements Source; Go tools need no start.
func (s *goSource) Start(context.Context) error { return nil }

// Restart implements Source; it does nothing.
func (s *goSource) Restart(context.Context) error { return nil }

// Close implements Source; it does nothing.
func (s *goSource) Close(context.Context) error { return nil }

// Tools returns the tools in the order given (duplicates included, so that
// the catalog reports them).
func (s *goSource) Tools(context.Context) ([]Tool, error) {
	for _, t := range s.tools {
		if t.Name == "" {
			return nil, opErr(ErrInvalidTool, nil, "source '%s': a tool has no name", s.name)
		}
	}
	return append([]Tool(nil), s.tools...), nil
}

// Call runs the tool's handler on its own goroutine, so that a handler that
// ignores ctx cannot hold the caller past ctx.
func (s *goSource) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	t, ok := s.byName[name]
	if !ok || t.Handler == nil {
		return nil, opErr(ErrUnknownTool, nil, "unknown tool '%s' in source '%s'", name, s.name)
	}
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: fmt.Errorf("tool '%s' of '%s' panicked: %v", name, s.name, r)}
			}
		}()
		res, err := t.Handler(ctx, args)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err == nil && o.res == nil {
			o.err = fmt.Errorf("tool '%s' of '%s' returned no result", name, s.name)
		}
		return o.res, o.err
	case <-ctx.Done():
		return nil, timeoutError(ctx, ctx, s.name, name, 0)
	}
}
