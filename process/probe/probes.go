package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/internal/quota"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
)

// probePdeathsig starts a child that starts a grandchild with
// PR_SET_PDEATHSIG=SIGKILL and exits; the grandchild must die with it.
func probePdeathsig(ctx context.Context, sup *process.Supervisor, self string) Item {
	verified := Item{Status: StatusVerified, Detail: "a child was killed when its parent exited"}
	p, err := sup.Start(childSpec(self, "check-pdeathsig", "pdeath"))
	if err != nil {
		return failed("start: %v", err)
	}
	defer p.Stop(context.Background(), 0)
	line, err := waitLine(ctx, p, `{"child"`)
	if err != nil {
		return failed("probe child did not report: %v", err)
	}
	var r struct {
		Child int `json:"child"`
	}
	if json.Unmarshal(line, &r) != nil || r.Child <= 0 {
		return failed("probe child reported %q", line)
	}
	st, ok := process.ReadStat(r.Child)
	if !ok {
		// Already gone: its parent exited and the signal did its work.
		return verified
	}
	ps := procs{"child": st}
	defer ps.killSurvivors()
	if _, err := p.Wait(ctx); err != nil {
		return failed("probe parent did not exit: %v", err)
	}
	if alive := ps.waitEnded(ctx, endedWait); len(alive) > 0 {
		return failed("a child with PR_SET_PDEATHSIG outlived its parent")
	}
	return verified
}

// probePTY runs a child on a pseudo-terminal and checks that it sees one.
func probePTY(ctx context.Context, sup *process.Supervisor, self string) Item {
	if !sup.Mechanisms().PTY {
		return Item{Status: StatusMissing, Detail: noteFor(sup.Mechanisms().Notes, "pty:")}
	}
	spec := childSpec(self, "check-pty", "tty")
	spec.PTY = &process.PTY{}
	p, err := sup.Start(spec)
	if err != nil {
		return failed("start on a pty: %v", err)
	}
	defer p.Stop(context.Background(), 0)
	out, err := p.WaitReady(ctx, func(b []byte) bool { return bytes.Contains(b, []byte("tty=")) })
	if err != nil {
		return failed("no output from a child on a pty: %v", err)
	}
	if !bytes.Contains(bytes.Join(out, nil), []byte("tty=yes")) {
		return failed("a child on a pty did not see a terminal")
	}
	return Item{Status: StatusVerified, Detail: "a child on a pseudo-terminal saw a terminal"}
}

// probeUserns starts a child in a new user namespace.
func probeUserns(ctx context.Context, self string) Item {
	cmd := exec.CommandContext(ctx, self, ChildCommand, "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return usernsMissing(err, "/proc/sys")
	}
	// The exit status does not matter (as PID 1 the orphan reaper may even
	// collect it first): the clone succeeded.
	cmd.Wait()
	return Item{Status: StatusVerified, Detail: "a child was started in a new user namespace"}
}

// usernsMissing explains a refused user namespace from the sysctls under
// sysctlDir (/proc/sys) that restrict them.
func usernsMissing(err error, sysctlDir string) Item {
	if u := errors.Unwrap(err); u != nil {
		err = u
	}
	detail := fmt.Sprintf("cannot create a user namespace: %v", err)
	for _, f := range []struct{ path, bad, say string }{
		{"user/max_user_namespaces", "0", "user.max_user_namespaces is 0"},
		{"kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone is 0"},
		{"kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor restricts unprivileged user namespaces"},
	} {
		if b, err := os.ReadFile(filepath.Join(sysctlDir, f.path)); err == nil && strings.TrimSpace(string(b)) == f.bad {
			detail += "; " + f.say
		}
	}
	return Item{Status: StatusMissing, Detail: detail}
}

// PIDInfo describes the PID namespace harnessd runs in.
type PIDInfo struct {
	// PID is this process's pid in its own namespace.
	PID int `json:"pid"`
	// PID1 reports that this process is PID 1 (the orphan reaper is on).
	PID1 bool `json:"pid1"`
	// Namespace is the PID namespace ("pid:[4026531836]").
	Namespace string `json:"namespace,omitempty"`
	// NestedNamespace reports a PID namespace below the initial one (a
	// container's).
	NestedNamespace bool `json:"nested_namespace"`
	// Init is the command name of this namespace's PID 1.
	Init string `json:"init,omitempty"`
}

// initialPIDNamespace names the initial PID namespace, whose inode number
// the kernel fixes (PROC_PID_INIT_INO, 0xEFFFFFFC).
const initialPIDNamespace = "pid:[4026531836]"

// ReadPIDInfo describes this process's PID namespace.
func ReadPIDInfo() PIDInfo {
	pi := PIDInfo{PID: os.Getpid()}
	pi.PID1 = pi.PID == 1
	// The initial PID namespace has a fixed inode (PROC_PID_INIT_INO). NSpid
	// in /proc/self/status cannot tell: a container's own procfs lists only
	// the pids of its own namespace.
	if l, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		pi.Namespace = l
		pi.NestedNamespace = l != initialPIDNamespace
	}
	if b, err := os.ReadFile("/proc/1/comm"); err == nil {
		pi.Init = strings.TrimSpace(string(b))
	}
	return pi
}

// pid1Item: harnessd as PID 1 — this process, or the namespace's init when
// check runs beside a serving daemon (kubectl exec ... harnessd check).
func pid1Item(pi PIDInfo) Item {
	where := "in the initial PID namespace"
	if pi.NestedNamespace {
		where = "in a nested PID namespace"
	}
	switch {
	case pi.PID1:
		return Item{Status: StatusAvailable, Detail: "harnessd is PID 1 " + where + ": the orphan reaper is on"}
	case pi.Init == "harnessd":
		return Item{Status: StatusAvailable, Detail: fmt.Sprintf("PID 1 %s is harnessd (this check runs as pid %d)", where, pi.PID)}
	default:
		return Item{Status: StatusMissing, Detail: fmt.Sprintf("PID 1 %s is %q; harnessd runs as pid %d", where, pi.Init, pi.PID)}
	}
}

// probeSandbox starts a throwaway sandbox (package sandbox) with the init
// every episode's sandbox has (the embedded one, placed where the
// sandbox's ids can reach it; else this binary): not self by its path,
// which a sandbox's ids may not reach (a binary under a 0700 HOME), so
// that the check does not report a sandbox missing that episodes have.
func probeSandbox(ctx context.Context) Item {
	r := sandbox.Probe(ctx, "")
	switch {
	case r.OK:
		return Item{Status: StatusVerified, Detail: "a probe harness ran alone in " + r.Detail}
	case r.Missing:
		return Item{Status: StatusMissing, Detail: r.Detail}
	default:
		return failed("%s", r.Detail)
	}
}

// probeDiskQuota mounts and unmounts a smallest quota file system under the
// temporary directory, as each episode's limits.disk does under the
// workspace root.
func probeDiskQuota(ctx context.Context) Item {
	dir := os.TempDir()
	if err := quota.Probe(ctx, dir); err != nil {
		return Item{Status: StatusMissing, Detail: err.Error() + " (an unset limits.disk then applies none, with a warning)"}
	}
	return Item{Status: StatusVerified, Detail: "a 1 MiB ext4 image on a loop device was mounted and unmounted under " + dir}
}
