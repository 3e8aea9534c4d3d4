package oneshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/bearer"
	"github.com/harnessd/harnessd/internal/beneath"
	"github.com/harnessd/harnessd/internal/environ"
)

// writeMCPConfig writes the bridge into the agent's own config file under
// the episode's HOME, merging with a file already there (a preset's or the
// workspace template's), and returns variables the agent needs to find it.
// With no tools or shape none it writes nothing.
//
//   - gemini: $HOME/.gemini/settings.json, mcpServers.NAME =
//     {httpUrl, headers{Authorization}, trust: true}
//   - opencode: $HOME/.config/opencode/opencode.json, mcp.NAME =
//     {type: "remote", url, headers{Authorization}, enabled: true}; sets
//     OPENCODE_CONFIG to it
//   - codex: $CODEX_HOME/config.toml (CODEX_HOME from the environment, else
//     $HOME/.codex, which is then set), table [mcp_servers.NAME] with url and
//     bearer_token_env_var = "HARNESSD_MCP_TOKEN" (the token stays out of
//     the file)
func writeMCPConfig(shape string, l *harness.Launch, env map[string]string) ([]string, error) {
	if shape == MCPNone || l.MCP == nil {
		return nil, nil
	}
	if l.Home == "" {
		return nil, errors.New("mcp_config needs the episode's HOME")
	}
	name := l.MCP.ServerName
	if name == "" {
		name = harness.DefaultMCPServerName
	}
	auth := map[string]any{bearer.HeaderName: bearer.Header(l.MCP.Token)}
	switch shape {
	case MCPGemini:
		home := beneath.Dir{Path: l.Home}
		return nil, mergeJSON(home, filepath.Join(".gemini", "settings.json"), "mcpServers", name, map[string]any{"httpUrl": l.MCP.URL, "headers": auth, "trust": true})
	case MCPOpenCode:
		rel := filepath.Join(".config", "opencode", "opencode.json")
		err := mergeJSON(beneath.Dir{Path: l.Home}, rel, "mcp", name, map[string]any{"type": "remote", "url": l.MCP.URL, "headers": auth, "enabled": true})
		return []string{"OPENCODE_CONFIG=" + filepath.Join(l.Home, rel)}, err
	case MCPCodex:
		dir, ok := env["CODEX_HOME"]
		if !ok {
			dir, ok = environ.Lookup(l.Env, "CODEX_HOME")
		}
		var set []string
		if !ok || dir == "" {
			dir = filepath.Join(l.Home, ".codex")
			set = append(set, "CODEX_HOME="+dir)
		}
		table := fmt.Sprintf("[mcp_servers.%s]\nurl = %s\nbearer_token_env_var = \"HARNESSD_MCP_TOKEN\"\n",
			tomlKey(name), kit.TOMLString(l.MCP.URL))
		root, rel, err := codexConfig(l.Home, dir)
		if err != nil {
			return set, err
		}
		return set, mergeTOMLTable(root, rel, "mcp_servers."+tomlKey(name), table)
	}
	return nil, fmt.Errorf("unknown mcp_config %q", shape)
}

// codexConfig is where Codex's config.toml is for CODEX_HOME dir: beneath
// the episode's HOME when dir is in it (the harness shapes it), else
// beneath dir itself, an operator's directory, made if need be.
func codexConfig(home, dir string) (beneath.Dir, string, error) {
	if rel, err := filepath.Rel(home, dir); err == nil && filepath.IsLocal(rel) {
		return beneath.Dir{Path: home}, filepath.Join(rel, "config.toml"), nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return beneath.Dir{}, "", err
	}
	return beneath.Dir{Path: dir}, "config.toml", nil
}

// maxConfigFile bounds the bytes of an agent's config file read to merge
// the bridge into it.
const maxConfigFile = 4 << 20

// mergeJSON sets obj[section][name] = value in the JSON object file rel
// beneath dir (a directory the harness may shape: beneath.Dir).
func mergeJSON(dir beneath.Dir, rel, section, name string, value any) error {
	doc := map[string]any{}
	b, err := dir.ReadFile(rel, maxConfigFile)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: existing file is not a JSON object: %w", rel, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	sec, ok := doc[section].(map[string]any)
	if !ok {
		sec = map[string]any{}
		doc[section] = sec
	}
	sec[name] = value
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return dir.WriteFile(rel, buf.Bytes())
}

// mergeTOMLTable replaces the table [header] in the TOML file rel beneath
// dir (or appends it) with table.
func mergeTOMLTable(dir beneath.Dir, rel, header, table string) error {
	b, err := dir.ReadFile(rel, maxConfigFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var out []string
	skip := false
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			skip = t == "["+header+"]"
		}
		if !skip {
			out = append(out, line)
		}
	}
	text := strings.TrimRight(strings.Join(out, "\n"), "\n")
	if text != "" {
		text += "\n\n"
	}
	return dir.WriteFile(rel, []byte(text+table))
}

// tomlKey writes a bare key when it can, else a quoted one.
func tomlKey(k string) string {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return kit.TOMLString(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}
