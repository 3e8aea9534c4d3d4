package oneshot

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/beneath"
)

func TestExpandIsArgumentSafe(t *testing.T) {
	tmpl := []string{"agent", "resume", PhSessionID, "--cwd={workspace}", "--turn", PhTurn, "--", PhMessage}
	msg := "a {session_id} b {turn} $(x) \"q\"\n--flag"
	got := expand(tmpl, vars{message: msg, sessionID: "s-1 {message}", workspace: "/w s", turn: 7})
	want := []string{"agent", "resume", "s-1 {message}", "--cwd=/w s", "--turn", "7", "--", msg}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if err := checkTemplate([]string{"x", "{mesage}"}); err == nil || !strings.Contains(err.Error(), "{mesage}") {
		t.Fatalf("typo accepted: %v", err)
	}
	if err := checkTemplate([]string{"-c", `mcp_servers.env={"url":"x"}`, "{message}"}); err != nil {
		t.Fatalf("JSON braces rejected: %v", err)
	}
}

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Format != FormatText || o.MCPConfig != MCPNone || o.SessionField != "" || o.InterruptGrace != DefaultInterruptGrace {
		t.Fatalf("defaults %+v", o)
	}
	for format, field := range map[string]string{FormatCodex: "thread_id", FormatGemini: "session_id", FormatOpenCode: "sessionID", FormatJSONL: "session_id"} {
		if o, err := ParseOptions(map[string]any{"format": format}); err != nil || o.SessionField != field {
			t.Errorf("%s: field %q (%v)", format, o.SessionField, err)
		}
	}
	if o, _ := ParseOptions(map[string]any{"format": "codex", "session_field": ""}); o.SessionField != "" {
		t.Fatal("session_field not turned off")
	}
	o, err = ParseOptions(map[string]any{
		"command": []any{"a", "{message}"}, "first_command": []any{"b"}, "session_regex": `id=(\w+)`,
		"mcp_config": "codex", "env": map[string]any{"X": "1"}, "nonzero_ok": true, "interrupt_grace": 1,
	})
	if err != nil || o.SessionRegex == nil || o.MCPConfig != MCPCodex || o.Env["X"] != "1" || !o.NonzeroOK || o.InterruptGrace != time.Second {
		t.Fatalf("%+v %v", o, err)
	}
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"comand": []any{"x"}}, `unknown key "comand"`},
		{map[string]any{"format": "yaml"}, "unknown format"},
		{map[string]any{"mcp_config": "claude"}, "unknown shape"},
		{map[string]any{"session_regex": "("}, "session_regex"},
		{map[string]any{"command": []any{}}, "must not be empty"},
		{map[string]any{"command": "codex exec"}, "harness.options.command"},
		{map[string]any{"first_command": []any{"x", "{sesion_id}"}}, "{sesion_id}"},
		{map[string]any{"env": []any{"X=1"}}, "harness.options.env"},
		{map[string]any{"interrupt_grace": "-1s"}, "negative"},
	} {
		if _, err := ParseOptions(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.opts, err, c.want)
		}
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mcpLaunch(t *testing.T, shape string) *harness.Launch {
	l := launch(t, opts(t, FormatJSONL, map[string]any{"mcp_config": shape}), "unused")
	l.MCP = &harness.MCPInjection{ServerName: "env", URL: "http://127.0.0.1:4321/mcp", Token: "tok-1", ConfigPath: "/x/mcp.json"}
	return l
}

func TestMCPConfigGemini(t *testing.T) {
	l := mcpLaunch(t, MCPGemini)
	path := filepath.Join(l.Home, ".gemini", "settings.json")
	(beneath.Dir{Path: l.Home}).WriteFile(path, []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}},"mcpServers":{"other":{"command":"x"}}}`))
	start(t, l)
	m := readJSON(t, path)
	if str(m, "security.auth.selectedType") != "gemini-api-key" || obj(m, "mcpServers.other") == nil {
		t.Fatalf("existing settings lost: %v", m)
	}
	env := obj(m, "mcpServers.env")
	if env["httpUrl"] != l.MCP.URL || env["trust"] != true || str(env, "headers.Authorization") != "Bearer tok-1" {
		t.Fatalf("server %v", env)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestMCPConfigOpenCode(t *testing.T) {
	l := mcpLaunch(t, MCPOpenCode)
	a := start(t, l)
	path := filepath.Join(l.Home, ".config", "opencode", "opencode.json")
	env := obj(readJSON(t, path), "mcp.env")
	if env["type"] != "remote" || env["url"] != l.MCP.URL || env["enabled"] != true || str(env, "headers.Authorization") != "Bearer tok-1" {
		t.Fatalf("server %v", env)
	}
	res, _ := turn(t, a, 1, "env OPENCODE_CONFIG;;env HARNESSD_MCP_TOKEN;;env HARNESSD_EPISODE_ID")
	if res.Response != "OPENCODE_CONFIG="+path+"\nHARNESSD_MCP_TOKEN=tok-1\nHARNESSD_EPISODE_ID=ep-1" {
		t.Fatalf("%q", res.Response)
	}
}

func TestMCPConfigCodex(t *testing.T) {
	l := mcpLaunch(t, MCPCodex)
	path := filepath.Join(l.Home, ".codex", "config.toml")
	old := "model_provider = \"mock\"\n\n[mcp_servers.env]\nurl = \"http://old\"\n\n[model_providers.mock]\nbase_url = \"http://127.0.0.1:1/v1\"\n"
	(beneath.Dir{Path: l.Home}).WriteFile(path, []byte(old))
	a := start(t, l)
	b, _ := os.ReadFile(path)
	want := "model_provider = \"mock\"\n\n[model_providers.mock]\nbase_url = \"http://127.0.0.1:1/v1\"\n\n" +
		"[mcp_servers.env]\nurl = \"http://127.0.0.1:4321/mcp\"\nbearer_token_env_var = \"HARNESSD_MCP_TOKEN\"\n"
	if string(b) != want {
		t.Fatalf("config.toml:\n%s\nwant:\n%s", b, want)
	}
	if strings.Contains(string(b), "tok-1") {
		t.Fatal("token written to the file")
	}
	res, _ := turn(t, a, 1, "env CODEX_HOME")
	if res.Response != "CODEX_HOME="+filepath.Dir(path) {
		t.Fatalf("%q", res.Response)
	}
	// A CODEX_HOME from the environment is honoured.
	l = mcpLaunch(t, MCPCodex)
	dir := filepath.Join(l.Home, "elsewhere")
	l.Options["env"] = map[string]any{"CODEX_HOME": dir}
	if err := New().Start(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.toml")); err != nil {
		t.Fatal(err)
	}
}

func TestTOMLQuoting(t *testing.T) {
	if got := kit.TOMLString("a\"b\\c\nd\x01"); got != `"a\"b\\c\u000Ad\u0001"` {
		t.Fatalf("%s", got)
	}
	if tomlKey("env") != "env" || tomlKey("my server") != `"my server"` {
		t.Fatal("keys")
	}
}
