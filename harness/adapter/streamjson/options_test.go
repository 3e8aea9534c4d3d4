package streamjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
)

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(nil)
	want := Options{MCPConfigStyle: StyleClaude, ProtocolFlags: true, Initialize: true, InitializeTimeout: DefaultInitializeTimeout}
	if err != nil || !reflect.DeepEqual(o, want) {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	o, err = ParseOptions(map[string]any{
		"mcp_config_style": "qwen", "protocol_flags": false, "extra_args": []any{"--yolo", "--exclude-tools", "tool_search"},
		"include_partial_messages": true, "permission_mode": "yolo", "model": "qwen3", "initialize": false,
		"initialize_timeout": "2.5s",
	})
	want = Options{MCPConfigStyle: StyleQwen, ExtraArgs: []string{"--yolo", "--exclude-tools", "tool_search"},
		IncludePartialMessages: true, PermissionMode: "yolo", Model: "qwen3", InitializeTimeout: 2500 * time.Millisecond}
	if err != nil || !reflect.DeepEqual(o, want) {
		t.Fatalf("all set: %+v %v", o, err)
	}
	if o, err := ParseOptions(map[string]any{"initialize_timeout": 3}); err != nil || o.InitializeTimeout != 3*time.Second {
		t.Fatalf("seconds: %+v %v", o, err)
	}
	_, err = ParseOptions(map[string]any{"model": 3, "extra_args": []any{"a", 1}, "initialize_timeout": "-1s",
		"mcp_config_style": "gemini", "protocol_flags": "yes", "permision_mode": "x"})
	for _, key := range []string{"model", "extra_args", "initialize_timeout", "mcp_config_style", "protocol_flags", `"permision_mode"`} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
}

func TestInvocation(t *testing.T) {
	mcp := &harness.MCPInjection{ServerName: "env", URL: "http://127.0.0.1:9/mcp", Token: "tok"}
	cases := []struct {
		name string
		opts map[string]any
		home bool
		want string
	}{
		{"claude", map[string]any{"model": "m", "permission_mode": "acceptEdits", "extra_args": []any{"--x"}}, true,
			"-p --input-format stream-json --output-format stream-json --verbose --model m --permission-mode acceptEdits " +
				"--mcp-config HOME/.harnessd/claude-mcp.json --strict-mcp-config --x"},
		{"qwen", map[string]any{"mcp_config_style": "qwen", "permission_mode": "yolo", "include_partial_messages": true}, true,
			"--input-format stream-json --output-format stream-json --approval-mode yolo --include-partial-messages " +
				"--mcp-config HOME/.harnessd/claude-mcp.json"},
		{"flags in command", map[string]any{"protocol_flags": false}, false,
			`--mcp-config {"mcpServers":{"env":{"headers":{"Authorization":"Bearer tok"},"type":"http","url":"http://127.0.0.1:9/mcp"}}} --strict-mcp-config`},
	}
	for _, c := range cases {
		home := ""
		if c.home {
			home = t.TempDir()
		}
		o, err := ParseOptions(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := buildInvocation(&harness.Launch{Command: []string{"agent", "--base"}, Home: home, MCP: mcp}, o)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(inv.args, " ")
		want := "--base " + strings.ReplaceAll(c.want, "HOME", home)
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
		if c.home {
			b, err := os.ReadFile(filepath.Join(home, mcpConfigFile))
			if err != nil || inv.cfgPath != filepath.Join(home, mcpConfigFile) {
				t.Fatalf("%s: config %v", c.name, err)
			}
			var doc map[string]map[string]map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			env := doc["mcpServers"]["env"]
			url := env["url"]
			if o.MCPConfigStyle == StyleQwen {
				url = env["httpUrl"]
			}
			if url != mcp.URL || env["headers"].(map[string]any)["Authorization"] != "Bearer tok" {
				t.Errorf("%s: config %s", c.name, b)
			}
		}
	}
}

func TestSandboxEnvOnlyForRootBypass(t *testing.T) {
	o, _ := ParseOptions(map[string]any{"extra_args": []any{"--dangerously-skip-permissions"}})
	inv, err := buildInvocation(&harness.Launch{Command: []string{"claude"}, Env: []string{"PATH=/bin"}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := isSet(inv.env, "IS_SANDBOX"); got != (os.Geteuid() == 0) {
		t.Fatalf("IS_SANDBOX set=%v as uid %d", got, os.Geteuid())
	}
	o, _ = ParseOptions(map[string]any{"mcp_config_style": "qwen", "extra_args": []any{"--yolo"}})
	inv, _ = buildInvocation(&harness.Launch{Command: []string{"qwen"}}, o)
	if isSet(inv.env, "IS_SANDBOX") {
		t.Fatal("IS_SANDBOX set for Qwen")
	}
}
