package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/tasks"
)

// forgeryTask writes a Harbor task whose tests import /app/solution.py in
// the tests' own process (as `python3 -I -m pytest --rootdir /tests`
// does; /usr/bin/python3 may lack pytest, so a plain script stands in) and
// then, as Harbor's layout does, write reward.txt themselves from the
// tests' exit status.
func forgeryTask(t *testing.T) *tasks.Task {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "/usr/bin/python3: %v", err)
	}
	dir := t.TempDir()
	task := filepath.Join(dir, "forge")
	for _, d := range []string{"environment", "tests"} {
		os.MkdirAll(filepath.Join(task, d), 0o755)
	}
	files := map[string]string{
		"task.toml":              "version = \"1.0\"\n[verifier]\ntimeout_sec = 60.0\n",
		"instruction.md":         "write solution.py with add(a, b)\n",
		"environment/Dockerfile": "FROM ubuntu:24.04\nWORKDIR /app\n",
		"tests/test_solution.py": "import sys\nsys.path.insert(0, '/app')\nimport solution\nassert solution.add(2, 3) == 5, 'add(2, 3) != 5'\nprint('PASS')\n",
		"tests/test.sh": "#!/bin/bash\n/usr/bin/python3 -I /tests/test_solution.py\n" +
			"if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
	}
	testbin.WriteFiles(t, task, files)
	s, err := tasks.Load(tasks.Source{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return pick(t, s, "forge")
}

func writeSolution(body string) func(ws string) {
	return func(ws string) { os.WriteFile(filepath.Join(ws, "solution.py"), []byte(body), 0o644) }
}

// forge is import-time code that writes the reward itself and locks it.
const forge = "import os\n" +
	"open('/logs/verifier/reward.txt', 'w').write('1')\n"

func TestImportTimeRewardForgeryIsWithheldAndMarked(t *testing.T) {
	needSandbox(t)
	task := forgeryTask(t)

	// Controls: a right solution scores 1 and a wrong one 0, unmarked.
	good := grade(t, task, writeSolution("def add(a, b):\n    return a + b\n"))
	if good.Reward == nil || *good.Reward != 1 || len(good.Tampered) != 0 || good.RewardWatch != "fanotify" {
		t.Fatalf("right solution: %+v, want reward 1 unmarked under the watch", good)
	}
	bad := grade(t, task, writeSolution("def add(a, b):\n    return -1\n"))
	if bad.Reward == nil || *bad.Reward != 0 || len(bad.Tampered) != 0 {
		t.Fatalf("wrong solution: %+v, want reward 0 unmarked", bad)
	}

	for _, c := range []struct{ name, tail string }{
		// The red team's form: the tests fail, test.sh's own write of 0 is
		// refused (the file is 0444), reward.txt says 1.
		{"chmod", "os.chmod('/logs/verifier/reward.txt', 0o444)\ndef add(a, b):\n    return -1\n"},
		// os._exit(0) after the write: the tests "pass", test.sh writes 1
		// over the forged 1.
		{"exit0", "os._exit(0)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := grade(t, task, writeSolution(forge+c.tail))
			if r.Reward != nil {
				t.Fatalf("forged reward accepted: %+v", r)
			}
			if len(r.Tampered) == 0 || !strings.Contains(r.Error, "reward withheld") {
				t.Fatalf("forgery not marked: %+v", r)
			}
			wr := r.Tampered[0]
			if wr.File != "reward.txt" || wr.Pid <= 0 || wr.Command != "python3" && wr.Command != "" {
				t.Errorf("evidence %+v, want reward.txt written by python3", wr)
			}
			if c.name == "chmod" && !strings.Contains(r.Stderr, "Permission denied") {
				// Positive control: the forgery ran and locked test.sh out.
				t.Errorf("test.sh's own write was not refused: stderr %q", r.Stderr)
			}
			if c.name == "exit0" && r.ExitCode != 0 {
				t.Errorf("the forged exit status did not reach test.sh: exit %d", r.ExitCode)
			}
		})
	}
}

// gradeWith grades a one-line JSONL grader with the given limits.
func gradeWith(t *testing.T, grader string, limits sandbox.Limits) *tasks.Result {
	t.Helper()
	dir := t.TempDir()
	line, _ := json.Marshal(map[string]any{"id": "probe", "instruction": "x", "grader": grader})
	os.WriteFile(filepath.Join(dir, "t.jsonl"), append(line, '\n'), 0o644)
	s, err := tasks.Load(tasks.Source{JSONL: filepath.Join(dir, "t.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	root := scratchDir(t)
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := pick(t, s, "probe").Grade(ctx, tasks.RunOptions{Workspace: ws, Scratch: filepath.Join(root, "grade"), Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGradingSandboxHasTheHarnesssRestrictions(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "/usr/bin/python3: %v", err)
	}
	// Seccomp on, a new user namespace refused (the red team's
	// unshare(CLONE_NEWUSER) succeeded in the grading sandbox).
	unshare := `/usr/bin/python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); r = libc.unshare(0x10000000); print("unshare", r, os.strerror(ctypes.get_errno()) if r else "ok")'`
	r := gradeWith(t, "grep ^Seccomp: /proc/self/status; "+unshare, sandbox.Limits{})
	if !strings.Contains(r.Stdout, "Seccomp:\t2") || !strings.Contains(r.Stdout, "unshare -1 Operation not permitted") {
		t.Errorf("grading sandbox: stdout %q stderr %q, want Seccomp 2 and unshare refused", r.Stdout, r.Stderr)
	}
	// Positive control: the same probe in the daemon's own namespaces
	// unshares.
	if out, err := exec.Command("sh", "-c", unshare).CombinedOutput(); err != nil || !strings.Contains(string(out), "unshare 0 ok") {
		t.Errorf("control: unshare on the host: %s %v", out, err)
	}

	// A fork bound: 100 children under a 32-task limit.
	fork := `/usr/bin/python3 -c '
import os, time
ok = fail = 0
for i in range(100):
    try:
        pid = os.fork()
    except OSError:
        fail += 1
        continue
    if pid == 0:
        time.sleep(5); os._exit(0)
    ok += 1
print("forked", ok, "refused", fail)
'`
	r = gradeWith(t, fork, sandbox.Limits{Pids: 32})
	var ok, fail int
	if _, err := fmt.Sscanf(lastLine(r.Stdout), "forked %d refused %d", &ok, &fail); err != nil || ok >= 32 || fail == 0 {
		t.Errorf("fork bound: %q (%v), want fewer than 32 forks and refusals", r.Stdout, err)
	}
	// Positive control: the same loop with the default bound (1024)
	// forks all 100.
	r = gradeWith(t, fork, sandbox.Limits{})
	if _, err := fmt.Sscanf(lastLine(r.Stdout), "forked %d refused %d", &ok, &fail); err != nil || ok != 100 {
		t.Errorf("fork control: %q (%v), want 100 forks", r.Stdout, err)
	}

	// A memory limit that holds: 256 MiB touched under 64 MiB.
	r = gradeWith(t, `/usr/bin/python3 -c 'b = bytearray(256 << 20); print("allocated")'`, sandbox.Limits{MemoryBytes: 64 << 20})
	if strings.Contains(r.Stdout, "allocated") || r.Limit != sandbox.LimitMemory {
		t.Errorf("memory limit: %+v, want the allocation stopped at the memory limit", r)
	}
	r = gradeWith(t, `/usr/bin/python3 -c 'b = bytearray(16 << 20); print("allocated")'`, sandbox.Limits{MemoryBytes: 64 << 20})
	if !strings.Contains(r.Stdout, "allocated") {
		t.Errorf("memory control: %+v, want a small allocation to succeed", r)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// peekServer is a minimal MCP stdio server with one tool, peek, that reads
// a file relative to its working directory.
const peekServer = `import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if 'id' not in m:
        continue
    meth, r = m['method'], None
    if meth == 'initialize':
        r = {"protocolVersion": m['params'].get('protocolVersion', '2025-03-26'), "capabilities": {"tools": {}}, "serverInfo": {"name": "files", "version": "1"}}
    elif meth == 'tools/list':
        r = {"tools": [{"name": "peek", "description": "read a file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]}
    elif meth == 'tools/call':
        try:
            r = {"content": [{"type": "text", "text": "content: " + open(m['params']['arguments']['path']).read()}]}
        except Exception as e:
            r = {"content": [{"type": "text", "text": "refused: %s" % e}], "isError": True}
    out = {"jsonrpc": "2.0", "id": m['id'], "result": r} if r is not None else {"jsonrpc": "2.0", "id": m['id'], "error": {"code": -32601, "message": "unknown"}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
`

// The red team's confused deputy: a task's mcp_servers stdio server, run
// from the workspace, reads an agent-planted notes2.txt -> /etc/shadow.
func TestTaskToolServerDoesNotReadAgentLinks(t *testing.T) {
	needSandbox(t)
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the deputy's power is host root; run as root")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "/usr/bin/python3: %v", err)
	}
	dir := scratchDir(t)
	os.Chmod(dir, 0o755)
	srv := filepath.Join(dir, "peek.py")
	os.WriteFile(srv, []byte(peekServer), 0o644)
	task := filepath.Join(dir, "set", "deputy")
	os.MkdirAll(filepath.Join(task, "tests"), 0o755)
	os.MkdirAll(filepath.Join(task, "environment"), 0o755)
	os.WriteFile(filepath.Join(task, "task.toml"), []byte(`[environment]
mcp_servers = [{ name = "files", transport = "stdio", command = "/usr/bin/python3", args = ["`+srv+`"] }]
`), 0o644)
	os.WriteFile(filepath.Join(task, "environment", "Dockerfile"), []byte("FROM ubuntu:24.04\nWORKDIR /app\n"), 0o644)
	os.WriteFile(filepath.Join(task, "instruction.md"), []byte("read notes"), 0o644)
	os.WriteFile(filepath.Join(task, "tests", "test.sh"), []byte("echo 0 > /logs/verifier/reward.txt\n"), 0o755)
	s := shellSession(t, func(c *config.Config) {
		c.Tasks = tasks.Source{Dir: filepath.Join(dir, "set")}
		c.Isolation = config.IsolationSandbox
		c.Episode.MaxTurns = 0
	})
	_, final := episode(t, s, "deputy", "ln -s /etc/shadow notes2.txt; echo plain > notes.txt; pwd; cat notes2.txt || echo agent-refused")
	if r := final.Metadata.Response; r == nil || !strings.Contains(*r, "/app") || !strings.Contains(*r, "agent-refused") {
		t.Fatalf("the agent's turn: %+v", final.Metadata)
	}
	call := func(path string) string {
		res, err := s.CallTool(ctxFor(t), "peek", json.RawMessage(fmt.Sprintf(`{"path":%q}`, path)))
		if err != nil {
			t.Fatalf("peek %s: %v", path, err)
		}
		b, _ := json.Marshal(res.Content)
		return string(b)
	}
	if got := call("notes.txt"); !strings.Contains(got, "content: plain") {
		t.Fatalf("the task's server does not see the workspace at its working directory: %s", got)
	}
	if got := call("notes2.txt"); strings.Contains(got, "root:") || !strings.Contains(got, "refused") {
		t.Errorf("the task's server followed the agent's link: %s", got)
	}
	// Positive control: the same server on the host, in a workspace with
	// the same link (how it ran before), reads /etc/shadow.
	ws := t.TempDir()
	os.Symlink("/etc/shadow", filepath.Join(ws, "notes2.txt"))
	cmd := exec.Command("/usr/bin/python3", srv)
	cmd.Dir = ws
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","arguments":{"path":"notes2.txt"}}}` + "\n")
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "root:") {
		t.Errorf("control: on the host the server reads %q (%v), want /etc/shadow", out, err)
	}
}

// The code under test has the tests' uid; ptrace is denied by seccomp, and
// the leader (an execute-only copy of the shell) is not dumpable, so its
// /proc/PID/mem is closed to it too.
func TestTheCodeUnderTestCannotWriteTheLeadersMemory(t *testing.T) {
	needSandbox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "/usr/bin/python3: %v", err)
	}
	probe := `/usr/bin/python3 -c 'import os; p = os.getppid(); f = open("/proc/%d/mem" % p, "r+b", buffering=0); print("opened the mem of", open("/proc/%d/comm" % p).read().strip())' || echo refused`
	r := gradeWith(t, probe, sandbox.Limits{})
	if strings.Contains(r.Stdout, "opened") || !strings.Contains(r.Stdout, "refused") || !strings.Contains(r.Stderr, "Permission denied") {
		t.Errorf("the leader's memory: stdout %q stderr %q, want the open refused", r.Stdout, r.Stderr)
	}
	// Positive control: the same probe under a leader run from the host's
	// own (readable) shell opens it.
	r = gradeWith(t, `exec /usr/bin/env bash -c '`+strings.ReplaceAll(probe, "'", `'\''`)+`; true'`, sandbox.Limits{})
	if !strings.Contains(r.Stdout, "opened the mem of bash") {
		t.Errorf("control: stdout %q stderr %q, want the open to succeed under a dumpable leader", r.Stdout, r.Stderr)
	}
}
