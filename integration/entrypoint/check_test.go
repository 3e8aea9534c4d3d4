package entrypoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

// mechanisms are the names harnessd check reports and --require takes.
var mechanisms = []string{"process_groups", "pdeathsig", "subreaper", "cgroup", "kill", "pty", "pid1", "userns", "sandbox", "disk_quota", "criu"}

var statuses = []string{"verified", "available", "missing", "failed", "off"}

// checkJSON is the shape of harnessd check --json.
type checkJSON struct {
	Version   string `json:"version"`
	KillMode  string `json:"kill_mode"`
	PeerCheck string `json:"peer_check"`
	Isolation string `json:"isolation"`
	Checks    map[string]struct {
		Status string `json:"status"`
		Detail string `json:"detail"`
	} `json:"checks"`
	Cgroup struct {
		Mount       string   `json:"mount"`
		Own         string   `json:"own"`
		Root        string   `json:"root"`
		Writable    *bool    `json:"writable"`
		Kill        *bool    `json:"kill"`
		Controllers []string `json:"controllers"`
		Error       string   `json:"error"`
	} `json:"cgroup"`
	PID struct {
		PID             int    `json:"pid"`
		PID1            *bool  `json:"pid1"`
		Namespace       string `json:"namespace"`
		NestedNamespace *bool  `json:"nested_namespace"`
		Init            string `json:"init"`
	} `json:"pid"`
	UID        *int              `json:"uid"`
	Agents     []json.RawMessage `json:"agents"`
	AgentsNote string            `json:"agents_note"`
	Required   []string          `json:"required"`
	Unmet      []string          `json:"unmet"`
	OK         *bool             `json:"ok"`
}

// run runs a binary with args (bounded) and returns stdout, stderr and the
// exit code.
func run(t *testing.T, argv ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", argv, err)
		}
	case <-time.After(exitBound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not finish within %s", argv, exitBound)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// checkReport runs harnessd check --json with args and decodes its report.
func checkReport(t *testing.T, argv ...string) (checkJSON, int) {
	t.Helper()
	out, errOut, code := run(t, argv...)
	var rep checkJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("%v: exit %d, output is not the report: %v\nstdout:\n%s\nstderr:\n%s", argv, code, err, out, errOut)
	}
	return rep, code
}

func validateShape(t *testing.T, rep checkJSON) {
	t.Helper()
	if rep.Version == "" || rep.KillMode == "" || !strings.HasSuffix(rep.KillMode, "pgroup") {
		t.Errorf("version %q kill_mode %q", rep.Version, rep.KillMode)
	}
	if rep.Isolation != "sandbox" && rep.Isolation != "process" {
		t.Errorf("isolation %q, want sandbox or process", rep.Isolation)
	}
	if rep.PeerCheck != "sock_diag+cgroup" && rep.PeerCheck != "proc_scan+ancestry" {
		t.Errorf("peer_check %q, want sock_diag+cgroup or proc_scan+ancestry", rep.PeerCheck)
	}
	for _, n := range mechanisms {
		c, ok := rep.Checks[n]
		if !ok {
			t.Errorf("no check %q", n)
			continue
		}
		if !slices.Contains(statuses, c.Status) {
			t.Errorf("check %s: status %q", n, c.Status)
		}
		if c.Status != "verified" && c.Status != "available" && c.Detail == "" {
			t.Errorf("check %s is %s without a reason", n, c.Status)
		}
	}
	if len(rep.Checks) != len(mechanisms) {
		t.Errorf("checks %v, want exactly %v", rep.Checks, mechanisms)
	}
	if rep.Cgroup.Writable == nil || rep.Cgroup.Kill == nil || rep.Cgroup.Controllers == nil {
		t.Errorf("cgroup section incomplete: %+v", rep.Cgroup)
	}
	if rep.Cgroup.Root == "" && rep.Cgroup.Error == "" {
		t.Errorf("cgroup section has neither a directory nor an error: %+v", rep.Cgroup)
	}
	if rep.PID.PID <= 0 || rep.PID.PID1 == nil || rep.PID.NestedNamespace == nil || rep.UID == nil {
		t.Errorf("pid section incomplete: %+v uid %v", rep.PID, rep.UID)
	}
	// The presets are linked in, so check lists every one of them.
	names := map[string]bool{}
	for _, raw := range rep.Agents {
		var a struct {
			Name      string `json:"name"`
			Installed bool   `json:"installed"`
			Note      string `json:"note"`
		}
		json.Unmarshal(raw, &a)
		if !a.Installed && a.Note == "" {
			t.Errorf("agent %s: not installed and no note saying how to install it", a.Name)
		}
		names[a.Name] = true
	}
	for _, want := range []string{"claude-code", "gemini", "opencode", "qwen", "copilot", "codex", "claude-acp", "goose"} {
		if !names[want] {
			t.Errorf("check does not list the %s preset (agents %s, note %q)", want, rep.Agents, rep.AgentsNote)
		}
	}
	if rep.Required == nil || rep.Unmet == nil || rep.OK == nil {
		t.Errorf("required %v unmet %v ok %v: want lists and a bool", rep.Required, rep.Unmet, rep.OK)
	}
}

// probeLeftovers lists harnessd probe children still running, and cgroup
// directories of check process pid left in root.
func probeLeftovers(bin, root string, pid int) []string {
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[0] == bin && args[1] == "__probe" {
			st, ok := readStat(mustAtoi(e.Name()))
			if ok && st.state != 'Z' {
				left = append(left, "process "+e.Name()+": "+strings.Join(args, " "))
			}
		}
	}
	if root != "" {
		for _, prefix := range []string{fmt.Sprintf("harnessd-%d-", pid), fmt.Sprintf("harnessd-probe-%d-", pid)} {
			m, _ := filepath.Glob(filepath.Join(root, prefix+"*"))
			left = append(left, m...)
		}
	}
	return left
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestCheckJSON: the --json report has its documented shape, agrees with its
// exit code, attacks the live configuration, and leaves nothing behind.
func TestCheckJSON(t *testing.T) {
	bin := testbin.Path(t, "harnessd")
	rep, code := checkReport(t, bin, "check", "--json")
	validateShape(t, rep)
	t.Logf("kill mode %s; checks %+v", rep.KillMode, rep.Checks)
	if (code == 0) != *rep.OK || (code != 0 && code != 1) {
		t.Fatalf("exit %d with ok=%v and no requirements", code, *rep.OK)
	}
	// The attack must have run: the tree kill and process groups are
	// verified (or failed, and then ok is false) — never merely available.
	for _, n := range []string{"kill", "process_groups", "pdeathsig"} {
		if s := rep.Checks[n].Status; s != "verified" && s != "failed" {
			t.Errorf("%s is %q: the probe did not run", n, s)
		}
	}
	if rep.Checks["kill"].Status != "verified" {
		t.Errorf("the live kill mechanism failed on this machine: %s", rep.Checks["kill"].Detail)
	}
	if *rep.PID.PID1 || rep.Checks["pid1"].Status != "missing" {
		t.Errorf("check run by a test is not PID 1: %+v %+v", rep.PID, rep.Checks["pid1"])
	}
	if left := probeLeftovers(bin, rep.Cgroup.Root, rep.PID.PID); len(left) > 0 {
		t.Errorf("check left behind: %v", left)
	}

	off, _ := checkReport(t, bin, "check", "--json", "--cgroup", "off", "--subreaper", "off")
	validateShape(t, off)
	if off.KillMode != "pgroup" || off.Checks["cgroup"].Status != "off" || off.Checks["subreaper"].Status != "off" {
		t.Errorf("--cgroup off --subreaper off: kill_mode %s, cgroup %+v, subreaper %+v", off.KillMode, off.Checks["cgroup"], off.Checks["subreaper"])
	}
	if off.Checks["kill"].Status != "verified" {
		t.Errorf("group kill plus the sweep did not end the probe tree: %s", off.Checks["kill"].Detail)
	}
}

// TestCheckRequire: --require decides the exit code: 0 when met, 3 when a
// required mechanism is missing (or off), 2 for an unknown name.
func TestCheckRequire(t *testing.T) {
	bin := testbin.Path(t, "harnessd")

	rep, code := checkReport(t, bin, "check", "--json", "--require", "process_groups,kill", "--require", "pdeathsig")
	if code != 0 || !*rep.OK || len(rep.Unmet) != 0 || !slices.Equal(rep.Required, []string{"process_groups", "kill", "pdeathsig"}) {
		t.Fatalf("met requirements: exit %d, ok %v, required %v, unmet %v, checks %+v", code, *rep.OK, rep.Required, rep.Unmet, rep.Checks)
	}

	rep, code = checkReport(t, bin, "check", "--json", "--cgroup", "off", "--require", "cgroup,pid1,kill")
	if code != 3 || *rep.OK || !slices.Equal(rep.Unmet, []string{"cgroup", "pid1"}) {
		t.Fatalf("unmet requirements: exit %d, ok %v, unmet %v", code, *rep.OK, rep.Unmet)
	}

	// --cgroup required is a requirement too (as it is for serve).
	rep, code = checkReport(t, bin, "check", "--json", "--cgroup", "required")
	if !slices.Contains(rep.Required, "cgroup") {
		t.Fatalf("--cgroup required not counted as a requirement: %v", rep.Required)
	}
	if want := map[bool]int{true: 0, false: 3}[rep.Checks["cgroup"].Status == "verified" || rep.Checks["cgroup"].Status == "available"]; code != want {
		t.Fatalf("--cgroup required with cgroup %+v: exit %d, want %d", rep.Checks["cgroup"], code, want)
	}

	out, errOut, code := run(t, bin, "check", "--cgroup", "off", "--require", "cgroup")
	if code != 3 || !strings.Contains(out, "MECHANISM") || !strings.Contains(out, "REFUSED: required mechanism(s) missing: cgroup") {
		t.Fatalf("table with an unmet requirement: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, n := range mechanisms {
		if !strings.Contains(out, "\n"+n+" ") {
			t.Errorf("table has no row for %s:\n%s", n, out)
		}
	}

	if _, errOut, code := run(t, bin, "check", "--require", "cgroup,nonsense"); code != 2 || !strings.Contains(errOut, `unknown mechanism "nonsense"`) {
		t.Fatalf("unknown mechanism: exit %d, stderr %s", code, errOut)
	}
}

// TestServeRequireRefuses: serve --require fails closed, with exit code 3
// and the reason in its log, before it listens.
func TestServeRequireRefuses(t *testing.T) {
	bin := testbin.Path(t, "harnessd")
	th := testbin.Path(t, "testharness")
	addrFile := filepath.Join(t.TempDir(), "addr")
	_, errOut, code := run(t, bin, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-format", "json",
		"--cgroup", "off", "--require", "cgroup,kill", "--", th, "agent")
	if code != 3 || !strings.Contains(errOut, "refusing to start: a required mechanism is missing") || !strings.Contains(errOut, `"mechanism":"cgroup"`) {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(errOut, `"mechanism":"kill"`) {
		t.Errorf("kill reported missing:\n%s", errOut)
	}
	if _, err := os.Stat(addrFile); err == nil {
		t.Error("serve listened despite a missing requirement")
	}
}

// TestCheckAsPID1: check run as a container's entrypoint reports PID 1 and
// a nested PID namespace.
func TestCheckAsPID1(t *testing.T) {
	ns := pidNamespaceArgs(t)
	rep, code := checkReport(t, append(append([]string{}, ns...), testbin.Path(t, "harnessd"), "check", "--json", "--require", "pid1,kill")...)
	validateShape(t, rep)
	if code != 0 || !*rep.PID.PID1 || !*rep.PID.NestedNamespace || rep.PID.Init != "harnessd" || rep.Checks["pid1"].Status != "available" {
		t.Fatalf("exit %d, pid %+v, pid1 %+v, kill %+v", code, rep.PID, rep.Checks["pid1"], rep.Checks["kill"])
	}
}

// TestHealthCommand: harnessd health exits 0 against a serving daemon, 1
// when nothing listens.
func TestHealthCommand(t *testing.T) {
	bin := testbin.Path(t, "harnessd")
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--log-format", "json",
		"--", testbin.Path(t, "testharness"), "agent")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(exitBound):
			cmd.Process.Kill()
			<-exited
		}
	}()
	var addr string
	deadline := time.Now().Add(startBound)
	for addr == "" {
		if b, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			addr = string(bytes.TrimSpace(b))
		} else if time.Now().After(deadline) {
			t.Fatal("harnessd serve did not listen")
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	out, errOut, code := run(t, bin, "health", "--url", "http://"+addr)
	if code != 0 || !strings.Contains(out, `"status":"healthy"`) {
		t.Fatalf("healthy daemon: exit %d\n%s%s", code, out, errOut)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	if _, _, code := run(t, bin, "health", "--url", "http://"+addr, "--timeout", "2s"); code != 1 {
		t.Fatalf("no daemon: exit %d, want 1", code)
	}
	if _, _, code := run(t, bin, "health", "extra"); code != 2 {
		t.Fatalf("bad usage: exit %d, want 2", code)
	}
}
