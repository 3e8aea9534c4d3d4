package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/internal/bearer"
)

// MCPTools calls tools on a streamable-HTTP MCP server with a bearer token.
// The connection is made on first use and reused.
type MCPTools struct {
	URL, Token      string
	ProtocolVersion string // empty: 2025-11-25
	// Headers are sent with every request (Token, if set, adds Authorization).
	Headers map[string]string

	mu sync.Mutex
	c  *client.Client
}

func (m *MCPTools) conn(ctx context.Context) (*client.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil {
		return m.c, nil
	}
	opts := []transport.StreamableHTTPCOption{}
	headers := map[string]string{}
	for k, v := range m.Headers {
		headers[k] = v
	}
	if m.Token != "" {
		headers[bearer.HeaderName] = bearer.Header(m.Token)
	}
	if len(headers) > 0 {
		opts = append(opts, transport.WithHTTPHeaders(headers))
	}
	c, err := client.NewStreamableHttpClient(m.URL, opts...)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = m.ProtocolVersion
	if req.Params.ProtocolVersion == "" {
		req.Params.ProtocolVersion = "2025-11-25"
	}
	req.Params.ClientInfo = mcp.Implementation{Name: "testharness-agent", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	m.c = c
	return c, nil
}

// List returns the names of the served tools.
func (m *MCPTools) List(ctx context.Context) ([]string, error) {
	c, err := m.conn(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(res.Tools))
	for i, t := range res.Tools {
		names[i] = t.Name
	}
	return names, nil
}

// Call calls one tool and returns its text content.
func (m *MCPTools) Call(ctx context.Context, name string, args json.RawMessage) (string, bool, error) {
	return m.CallMeta(ctx, name, args, nil)
}

// CallMeta is Call with extra _meta fields in the request (Claude Code sends
// "claudecode/toolUseId").
func (m *MCPTools) CallMeta(ctx context.Context, name string, args json.RawMessage, meta map[string]any) (string, bool, error) {
	c, err := m.conn(ctx)
	if err != nil {
		return "", false, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	if len(meta) > 0 {
		req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

// Close closes the connection, if any.
func (m *MCPTools) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil {
		m.c.Close()
		m.c = nil
	}
}
