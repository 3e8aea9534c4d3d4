package streamjson_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

var streamFlags = []string{"agent", "--protocol", "stream-json", "-p", "--verbose",
	"--input-format", "stream-json", "--output-format", "stream-json"}

// streamRun feeds input lines to a stream-json agent and returns its output
// lines (decoded), its stderr and its exit code.
func streamRun(t *testing.T, args []string, input ...string) ([]map[string]any, string, int) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "testharness"), args...)
	cmd.Stdin = strings.NewReader(strings.Join(input, "\n") + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			m = map[string]any{"type": "raw", "line": sc.Text()}
		}
		lines = append(lines, m)
	}
	return lines, stderr.String(), code
}

func user(text string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	return string(b)
}

func kinds(lines []map[string]any) string {
	var out []string
	for _, l := range lines {
		k := l["type"].(string)
		if s, ok := l["subtype"].(string); ok {
			k += "/" + s
		}
		out = append(out, k)
	}
	return strings.Join(out, ",")
}

func TestStreamJSONTurns(t *testing.T) {
	lines, stderr, code := streamRun(t, append(streamFlags, "--model", "m1"),
		`{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","hooks":null}}`,
		user("reply one;;think hmm"),
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"history"}]}}`,
	)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "control_response,system/init,assistant,assistant,result/success,system/init,assistant,result/success"
	if got := kinds(lines); got != want {
		t.Fatalf("lines %s\nwant  %s", got, want)
	}
	if r := lines[0]["response"].(map[string]any); r["subtype"] != "success" || r["request_id"] != "r1" {
		t.Fatalf("initialize response %+v", r)
	}
	if lines[1]["model"] != "m1" || lines[4]["result"] != "one" || lines[7]["result"] != "history: reply one;;think hmm | history" {
		t.Fatalf("lines %+v", lines)
	}
	// Requests it does not know are refused, not left unanswered.
	lines, _, _ = streamRun(t, streamFlags, `{"type":"control_request","request_id":"r2","request":{"subtype":"set_model"}}`)
	if r, _ := lines[0]["response"].(map[string]any); len(lines) != 1 || r["subtype"] != "error" || r["request_id"] != "r2" {
		t.Fatalf("unsupported request answered %+v", lines)
	}
}

func TestStreamJSONAPIErrorExits(t *testing.T) {
	lines, _, code := streamRun(t, streamFlags, user("apierror 401 bad key"), user("reply never"))
	if code != 1 || kinds(lines) != "system/init,assistant,result/success" {
		t.Fatalf("exit %d lines %s", code, kinds(lines))
	}
	if r := lines[2]; r["is_error"] != true || r["api_error_status"] != float64(401) || r["result"] != "API Error: 401 bad key" {
		t.Fatalf("result %+v", r)
	}
	if a := lines[1]; a["error"] != "authentication_failed" || a["message"].(map[string]any)["model"] != "<synthetic>" {
		t.Fatalf("assistant %+v", a)
	}
}

func TestStreamJSONFlagChecks(t *testing.T) {
	bin := testbin.Path(t, "testharness")
	out, err := exec.Command(bin, "agent", "-p", "--verbose").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "stream-json only") {
		t.Fatalf("jsonl with Claude flags: %v %s", err, out)
	}
	_, stderr, code := streamRun(t, []string{"agent", "--protocol", "stream-json", "-p",
		"--input-format", "stream-json", "--output-format", "stream-json"})
	if code != 1 || !strings.Contains(stderr, "requires --verbose") {
		t.Fatalf("missing --verbose: %d %s", code, stderr)
	}
	for _, cfg := range []string{`{"servers":{}}`, `{"mcpServers":{"s":{"command":"x"}}}`, "/nonexistent.json", "{"} {
		_, stderr, code := streamRun(t, append(streamFlags, "--mcp-config", cfg))
		if code != 1 || !strings.Contains(stderr, "Invalid MCP configuration") {
			t.Errorf("--mcp-config %s: %d %s", cfg, code, stderr)
		}
	}
}

func TestStreamJSONMCPConfigStyles(t *testing.T) {
	// Both dialects parse; an unreachable server is reported as failed.
	file := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(file, []byte(`{"mcpServers":{"q":{"httpUrl":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer x"}}}}`), 0o600)
	inline := `{"mcpServers":{"c":{"type":"http","url":"http://127.0.0.1:1/mcp"}}}`
	lines, stderr, code := streamRun(t, append(streamFlags, "--mcp-config", inline, "--mcp-config", file, "--strict-mcp-config"),
		user("reply x"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := fmt.Sprint(lines[0]["mcp_servers"])
	if got != "[map[name:c status:failed] map[name:q status:failed]]" {
		t.Fatalf("mcp_servers %s", got)
	}
}
