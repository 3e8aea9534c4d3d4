package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

// A sandboxed harness stays in the daemon's session, leading a process
// group of its own: a session of its own would be a scheduling group of
// its own (autogroup), as heavy as the whole daemon (internal/linux/session).
func TestHarnessStaysInTheDaemonsSessionAndGroup(t *testing.T) {
	need(t)
	r, _ := attempt(t, baseConfig(t), "session")
	var sid, pgid, pid int
	if _, err := fmt.Sscanf(r.Value, "sid=%d pgid=%d pid=%d", &sid, &pgid, &pid); err != nil || !r.OK {
		t.Fatalf("agent said %+v (%v)", r, err)
	}
	if sid != 0 {
		// 0: the session's leader is outside the PID namespace (the
		// daemon's); the harness's own pid would be a session of its own.
		t.Errorf("the harness is in session %d inside the sandbox (pid %d): want the daemon's, seen from inside as 0", sid, pid)
	}
	if pgid != pid {
		t.Errorf("the harness's process group is %d, not its own (%d): the init's signals would miss it", pgid, pid)
	}
	mine, err := os.ReadFile("/proc/self/autogroup")
	if err != nil {
		t.Logf("this kernel has no autogroup (%v): only the session is checked", err)
		return
	}
	if len(r.List) != 1 || r.List[0] != autogroupName(mine) {
		t.Errorf("the harness's scheduling group is %v, the daemon's %q", r.List, autogroupName(mine))
	}
}

const ttyDaemonCommand = "__sandbox-test-ttydaemon"

// ttyDaemonReport is what runTTYDaemon prints: its own open of /dev/tty,
// a plain child's, and a sandboxed harness's.
type ttyDaemonReport struct {
	Daemon, Child, Harness result
	Error                  string
}

// runTTYDaemon stands in for a harnessd started from a terminal (the test
// makes the pty its controlling terminal): it opens /dev/tty itself, has a
// plain child try (the positive control: a process of its session reaches
// the operator's terminal), then a sandboxed harness.
func runTTYDaemon() int {
	var rep ttyDaemonReport
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	rep.Daemon = outcome(err)
	if err == nil {
		f.Close()
	}
	exe, _ := os.Executable()
	out, err := exec.Command(exe, agentCommand, "ctty").Output()
	if err != nil || json.Unmarshal(out, &rep.Child) != nil {
		rep.Error = fmt.Sprintf("plain child: %q %v", out, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		rep.Error = err.Error()
		return 1
	}
	sb, err := sandbox.Start(ctx, sandbox.Config{Name: "ttydaemon", Binds: []sandbox.Bind{{Src: exe, Dst: agentPath}}, Stdout: pw, Stderr: os.Stderr})
	pw.Close()
	if err != nil {
		rep.Error = "start sandbox: " + err.Error()
		return 1
	}
	defer sb.Close()
	if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Args: []string{agentCommand, "ctty"}}); err != nil {
		rep.Error = "run: " + err.Error()
		return 1
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || json.Unmarshal([]byte(line), &rep.Harness) != nil {
		rep.Error = fmt.Sprintf("harness said %q: %v", line, err)
		return 1
	}
	return 0
}

// A daemon started from a terminal: its sandboxed harness, in the daemon's
// session, cannot open that terminal (TIOCSTI, reading the operator's
// keys), while a plain child of the daemon can.
func TestHarnessCannotReachTheDaemonsTerminal(t *testing.T) {
	need(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		testbin.Missing(t, "no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(self(t), ttyDaemonCommand)
	cmd.Stdin, cmd.Stderr = tty, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := cmd.Output()
	tty.Close()
	var rep ttyDaemonReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("tty daemon said %q (%v, %v)", out, err, jerr)
	}
	if rep.Error != "" || err != nil {
		t.Fatalf("tty daemon: %s (%v)", rep.Error, err)
	}
	if !rep.Daemon.OK || !rep.Child.OK {
		t.Fatalf("positive control: the daemon (%+v) and its plain child (%+v) should open their terminal", rep.Daemon, rep.Child)
	}
	if rep.Harness.OK || !strings.Contains(rep.Harness.Errno, "ENXIO") {
		t.Fatalf("the sandboxed harness opened /dev/tty, or failed otherwise than having no terminal: %+v", rep.Harness)
	}
}
