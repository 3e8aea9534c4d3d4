package streamjson

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/bearer"
	"github.com/harnessd/harnessd/internal/beneath"
	"github.com/harnessd/harnessd/internal/environ"
)

// mcpConfigFile is where, under the episode's HOME, the adapter writes the
// --mcp-config file (mode 0600, so the bridge token stays out of argv).
const mcpConfigFile = ".harnessd/claude-mcp.json"

// invocation is what Start runs: the arguments after the program name, the
// variables added to the harnessd environment, and the MCP config file
// written for it (empty if inline).
type invocation struct {
	args    []string
	env     []string
	cfgPath string
}

// protocolFlags returns the flags the stream-json protocol needs.
func protocolFlags(style string) []string {
	if style == StyleQwen {
		return []string{"--input-format", "stream-json", "--output-format", "stream-json"}
	}
	return []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
}

// buildInvocation appends to l.Command what the protocol, the options and
// the MCP injection need. The MCP config goes into a file under l.Home when
// there is one, inline otherwise. Order: command, protocol flags, --model,
// permission flag, --include-partial-messages, --mcp-config (and
// --strict-mcp-config right after it, which also ends Claude's variadic
// --mcp-config), extra_args.
func buildInvocation(l *harness.Launch, o Options) (invocation, error) {
	inv := invocation{args: append([]string(nil), l.Command[1:]...)}
	if o.ProtocolFlags {
		inv.args = append(inv.args, protocolFlags(o.MCPConfigStyle)...)
	}
	if o.Model != "" {
		inv.args = append(inv.args, "--model", o.Model)
	}
	if o.PermissionMode != "" {
		flag := "--permission-mode"
		if o.MCPConfigStyle == StyleQwen {
			flag = "--approval-mode"
		}
		inv.args = append(inv.args, flag, o.PermissionMode)
	}
	if o.IncludePartialMessages {
		inv.args = append(inv.args, "--include-partial-messages")
	}
	if l.MCP != nil {
		cfg, err := mcpConfigJSON(l.MCP, o.MCPConfigStyle)
		if err != nil {
			return inv, err
		}
		value := string(cfg)
		if l.Home != "" {
			inv.cfgPath = filepath.Join(l.Home, mcpConfigFile)
			// The HOME is the harness's to shape (a fork's is its parent's
			// copy, links included): the write stays beneath it.
			if err := (beneath.Dir{Path: l.Home}).WriteFile(mcpConfigFile, cfg); err != nil {
				return inv, fmt.Errorf("write MCP config: %w", err)
			}
			value = inv.cfgPath
		}
		inv.args = append(inv.args, "--mcp-config", value)
		if o.MCPConfigStyle == StyleClaude {
			inv.args = append(inv.args, "--strict-mcp-config")
		}
	}
	inv.args = append(inv.args, o.ExtraArgs...)
	if needsSandboxEnv(o, inv.args) && os.Geteuid() == 0 && !isSet(inv.env, "IS_SANDBOX") {
		// Claude Code refuses to bypass permissions as root unless told it
		// runs in a sandbox (verified with 2.1.197).
		inv.env = append(inv.env, "IS_SANDBOX=1")
	}
	return inv, nil
}

// mcpConfigJSON describes the bridge as one streamable-HTTP server in the
// chosen style.
func mcpConfigJSON(m *harness.MCPInjection, style string) ([]byte, error) {
	name := m.ServerName
	if name == "" {
		name = harness.DefaultMCPServerName
	}
	headers := map[string]string{}
	if m.Token != "" {
		headers[bearer.HeaderName] = bearer.Header(m.Token)
	}
	server := map[string]any{"type": "http", "url": m.URL, "headers": headers}
	if style == StyleQwen {
		// Gemini-style schema; trust skips per-tool confirmation for the
		// environment's own tools.
		server = map[string]any{"httpUrl": m.URL, "headers": headers, "trust": true}
	}
	return json.Marshal(map[string]any{"mcpServers": map[string]any{name: server}})
}

// needsSandboxEnv reports a Claude invocation that bypasses permissions.
func needsSandboxEnv(o Options, args []string) bool {
	if o.MCPConfigStyle != StyleClaude {
		return false
	}
	if o.PermissionMode == "bypassPermissions" {
		return true
	}
	for i, a := range args {
		switch {
		case a == "--dangerously-skip-permissions", a == "--permission-mode=bypassPermissions":
			return true
		case a == "--permission-mode" && i+1 < len(args) && args[i+1] == "bypassPermissions":
			return true
		}
	}
	return false
}

// isSet reports whether env sets name.
func isSet(env []string, name string) bool {
	_, ok := environ.Lookup(env, name)
	return ok
}
