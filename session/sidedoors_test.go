package session_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/wire"
)

func detail(obs *wire.Observation, name string) wire.RewardDetail {
	for _, d := range obs.Metadata.RewardDetails {
		if d.Name == name {
			return d
		}
	}
	return wire.RewardDetail{}
}

// The red team's conftest.py escape, as a shell rubric (/usr/bin/python3
// has no pytest here): a command rubric runs a file the agent wrote in its
// workspace. On the host it read /etc/shadow as root and scored 1.
func TestCommandRubricRunningAgentCodeIsSandboxed(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the escape is to host root; run as root")
	}
	script := `id -u; touch rubric-was-here 2>/dev/null && echo wrote-workspace; cat /etc/shadow >/dev/null 2>&1 && echo 1 || echo 0`
	// Positive control: the same script as the host supervisor ran it.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "check.sh"), []byte(script), 0o644)
	cmd := exec.Command("sh", "check.sh")
	cmd.Dir = dir
	if out, err := cmd.Output(); err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "1") {
		t.Fatalf("control: on the host the script scores %q (%v), want 1", out, err)
	}

	s := sandboxed(t, func(c *config.Config) {
		c.Rubrics = []rubric.Spec{
			{Name: "agent-script", Type: rubric.KindCommand, Command: []string{"sh", "check.sh"}},
			// Kept: an honest rubric over the workspace still scores.
			{Name: "answer", Type: rubric.KindCommand, Command: []string{"sh", "-c", `[ "$(cat answer.txt)" = 42 ] && echo 1 || echo 0`}},
		}
	})
	reset(t, s)
	obs := step(t, s, "write check.sh "+script+";;write answer.txt 42;;say done")
	a, ans := detail(obs, "agent-script"), detail(obs, "answer")
	if a.Score == nil || *a.Score != 0 || strings.Contains(a.Detail, "wrote-workspace") || strings.HasPrefix(a.Detail, "0\n") {
		t.Errorf("agent-written rubric code: %+v, want score 0, a non-root uid and a read-only workspace", a)
	}
	if ans.Score == nil || *ans.Score != 1 {
		t.Errorf("honest rubric: %+v, want 1", ans)
	}
	ws := episodeDir(t, s, "workspace") // its host path
	if _, err := os.Stat(filepath.Join(ws, "answer.txt")); err != nil {
		t.Fatalf("the agent's answer is not in the workspace %s on the host: %v", ws, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "rubric-was-here")); err == nil {
		t.Errorf("the rubric wrote into the workspace %s", ws)
	}
}

// filesServer is a minimal MCP stdio server with one tool, peek, that
// reads the file it is given (relative to its working directory).
const filesServer = `import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if 'id' not in m:
        continue
    meth, r = m['method'], None
    if meth == 'initialize':
        r = {"protocolVersion": m['params'].get('protocolVersion', '2025-03-26'), "capabilities": {"tools": {}}, "serverInfo": {"name": "files", "version": "1"}}
    elif meth == 'tools/list':
        r = {"tools": [{"name": "peek", "description": "read a file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                       {"name": "dial", "description": "connect to 127.0.0.1:port", "inputSchema": {"type": "object", "properties": {"port": {"type": "integer"}}, "required": ["port"]}}]}
    elif meth == 'tools/call' and m['params']['name'] == 'dial':
        import socket
        try:
            socket.create_connection(('127.0.0.1', m['params']['arguments']['port']), timeout=5).close()
            r = {"content": [{"type": "text", "text": "connected"}]}
        except Exception as e:
            r = {"content": [{"type": "text", "text": "refused: %s" % e}], "isError": True}
    elif meth == 'tools/call':
        try:
            r = {"content": [{"type": "text", "text": "content: " + open(m['params']['arguments']['path']).read()}]}
        except Exception as e:
            r = {"content": [{"type": "text", "text": "refused: %s" % e}], "isError": True}
    if r is None:
        out = {"jsonrpc": "2.0", "id": m['id'], "error": {"code": -32601, "message": "unknown method"}}
    else:
        out = {"jsonrpc": "2.0", "id": m['id'], "result": r}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
`

// filesServerPath writes filesServer where every sandbox can read it.
func filesServerPath(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the deputy's power is host root; run as root")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "/usr/bin/python3: %v", err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "harnessd-sidedoor-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	srv := filepath.Join(dir, "files.py")
	os.WriteFile(srv, []byte(filesServer), 0o644)
	return srv
}

// A sandboxed tool server has no network unless its entry declares it:
// a listener on the host's loopback is refused without network: true and
// reached with it.
func TestSandboxedToolServerHasNetworkOnlyWhenDeclared(t *testing.T) {
	srv := filesServerPath(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, network := range []bool{false, true} {
		s := sandboxed(t, func(c *config.Config) {
			c.Tools = append(c.Tools, config.ToolConfig{Name: "files", Command: []string{"/usr/bin/python3", srv}, PerEpisode: true, Network: network})
		})
		reset(t, s)
		got := responseText(t, s, fmt.Sprintf(`tool dial {"port":%d}`, port))
		if network != strings.Contains(got, "connected") {
			t.Errorf("network: %v: dial says %q", network, got)
		}
	}
}

// The confused deputy: a tool server reads an agent-planted link to
// /etc/shadow. Sandboxed (the default) it cannot; the same server with
// isolation: host (the positive control) can, and is listed as a side
// door.
func TestToolServerDoesNotFollowAgentLinksOutOfTheWorkspace(t *testing.T) {
	srv := filesServerPath(t)
	for _, iso := range []string{"", config.ToolIsolationHost} {
		t.Run("isolation="+iso, func(t *testing.T) {
			var cfg *config.Config
			s := sandboxed(t, func(c *config.Config) {
				c.Tools = append(c.Tools, config.ToolConfig{Name: "files", Command: []string{"/usr/bin/python3", srv}, PerEpisode: true, Isolation: iso})
				cfg = c
			})
			reset(t, s)
			// The harness sees its workspace at its fixed path, as does a
			// sandboxed tool server; one on the host sees the host path.
			ws := episodeDir(t, s, "workspace")
			if err := os.Symlink("/etc/shadow", filepath.Join(ws, "notes2.txt")); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("plain"), 0o644)
			inside := strings.TrimSpace(responseText(t, s, "pwd"))
			if iso == config.ToolIsolationHost {
				inside = ws
			}
			got := responseText(t, s, fmt.Sprintf(`tool peek {"path":%q}`, inside+"/notes2.txt"))
			plain := responseText(t, s, fmt.Sprintf(`tool peek {"path":%q}`, inside+"/notes.txt"))
			if !strings.Contains(plain, "content: plain") {
				t.Fatalf("the server does not reach the workspace: %q", plain)
			}
			doors := cfg.SideDoors("")
			if iso == config.ToolIsolationHost {
				if !strings.Contains(got, "root:") {
					t.Fatalf("control: on the host the server reads %q, want /etc/shadow", got)
				}
				if len(doors) != 1 || !strings.Contains(doors[0], `"files"`) {
					t.Errorf("side doors %q, want the files server listed", doors)
				}
				return
			}
			if strings.Contains(got, "root:") || !strings.Contains(got, "refused") {
				t.Errorf("sandboxed server followed the link: %q", got)
			}
			if len(doors) != 0 {
				t.Errorf("side doors %q, want none", doors)
			}
		})
	}
}

// A sandboxed tool server works in its configured directory, bound
// read-only, and sees none of the daemon's hidden paths inside it (here
// the record directory).
func TestSandboxedToolServerSeesItsDirectoryButNotTheDaemonsFiles(t *testing.T) {
	srv := filesServerPath(t)
	// Under /tmp, which every sandbox replaces by its own: the directory
	// is seen only through its bind.
	dir := t.TempDir()
	// Searchable by the sandbox's ids (the server runs as none of the
	// daemon's): a 0700 directory of root's is out of its reach however it
	// is mounted.
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "visible.txt"), []byte("tool data"), 0o644)
	os.MkdirAll(filepath.Join(dir, "records"), 0o755)
	os.WriteFile(filepath.Join(dir, "records", "secret.txt"), []byte("daemon secret"), 0o644)
	s := sandboxed(t, func(c *config.Config) {
		c.RecordDir = filepath.Join(dir, "records")
		c.Tools = append(c.Tools, config.ToolConfig{Name: "files", Command: []string{"/usr/bin/python3", srv}, Dir: dir})
	})
	reset(t, s)
	if got := responseText(t, s, `tool peek {"path":"visible.txt"}`); !strings.Contains(got, "content: tool data") {
		t.Errorf("the server's own directory: %q", got)
	}
	if got := responseText(t, s, `tool peek {"path":"records/secret.txt"}`); strings.Contains(got, "daemon secret") || !strings.Contains(got, "refused") {
		t.Errorf("the record directory inside the server's directory: %q", got)
	}
	// Control: the file is there on the host.
	if b, err := os.ReadFile(filepath.Join(dir, "records", "secret.txt")); err != nil || string(b) != "daemon secret" {
		t.Fatalf("control: %q %v", b, err)
	}
}

// The red team's reward forgery through the answer alone: a penalty
// rubric (weight -1) reading HARNESSD_RESPONSE failed to start when the
// answer held a NUL byte (no environment string can) or passed 128 KiB
// (E2BIG), and a failed rubric was left out of the sum: the reward went
// from 0 to 1. The answer's NUL is now U+FFFD there and a long answer is
// cut (HARNESSD_RESPONSE_TRUNCATED=1), so the penalty scores each time;
// the control is the same penalty on a plain answer.
func TestTheAnswerCannotKeepAPenaltyRubricFromScoring(t *testing.T) {
	minusOne := -1.0
	penalty := `case "$HARNESSD_RESPONSE" in *forbidden*) hit=1;; *) hit=0;; esac; echo "truncated=${HARNESSD_RESPONSE_TRUNCATED:-0} bytes=${#HARNESSD_RESPONSE}"; echo $hit`
	s := sandboxed(t, func(c *config.Config) {
		c.Rubrics = []rubric.Spec{
			{Name: "answer", Type: rubric.KindMatch, Contains: "42"},
			{Name: "penalty", Type: rubric.KindCommand, Command: []string{"sh", "-c", penalty}, Weight: &minusOne},
		}
	})
	reset(t, s)
	for _, c := range []struct{ name, answer, detail string }{
		{"control: a plain answer", "forbidden 42", "truncated=0"},
		{"a NUL byte", "forbidden 42\x00", "truncated=0"},
		{"200 KB", "forbidden 42 " + strings.Repeat("x", 200_000), "truncated=1 bytes=65536"},
	} {
		obs := step(t, s, "reply "+c.answer)
		p := detail(obs, "penalty")
		if p.Score == nil || *p.Score != 1 || !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: penalty %+v, want a score of 1 and %q", c.name, p, c.detail)
		}
		if obs.Reward == nil || *obs.Reward != 0 {
			t.Errorf("%s: reward %v, want 0 (1 for the answer, -1 for the penalty)", c.name, rewardText(obs))
		}
	}
}

// rewardText is an observation's reward for messages.
func rewardText(obs *wire.Observation) string {
	if obs.Reward == nil {
		return "null"
	}
	return fmt.Sprint(*obs.Reward)
}
