package probe

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/process"
)

// criuCandidates are where a criu binary is looked for beside PATH (a
// daemon's PATH may lack the sbin directories, where Debian installs it).
var criuCandidates = []string{"/usr/sbin/criu", "/sbin/criu", "/usr/local/sbin/criu"}

// findCRIU returns the criu program, "" when none is installed.
func findCRIU() string {
	if p, err := exec.LookPath("criu"); err == nil {
		return p
	}
	for _, p := range criuCandidates {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// criuNote says that CRIU is never required.
const criuNote = "optional: a fork uses the agent's own resume, the line protocol's fork or replay without it"

// probeCRIU runs `criu check` (the kernel features a checkpoint/restore of
// a process tree needs): available when it passes, missing with its reason
// otherwise — never failed, since nothing requires CRIU (a criu that is
// installed but does not work on this kernel, as Debian's 3.17 on 6.18
// with "Unexpected rt vDSO area bounds", is as good as none).
func probeCRIU(ctx context.Context) Item {
	return criuItem(ctx, findCRIU())
}

// criuItem is probeCRIU with the program found at path ("" for none).
func criuItem(ctx context.Context, path string) Item {
	if path == "" {
		return Item{Status: StatusMissing, Detail: "criu is not installed (" + criuNote + ")"}
	}
	cmd := exec.CommandContext(ctx, path, "check")
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A tracked child: the daemon's orphan reaper would otherwise take its
	// exit status first.
	if err := process.StartCommand(cmd); err != nil {
		return Item{Status: StatusMissing, Detail: fmt.Sprintf("%s check could not run: %v (%s)", path, err, criuNote)}
	}
	err := cmd.Wait()
	process.ReleaseCommand(cmd.Process.Pid)
	text := strings.TrimSpace(out.String())
	if err != nil {
		return Item{Status: StatusMissing, Detail: fmt.Sprintf("%s check failed (%v): %s (%s)", path, err, criuReason(text), criuNote)}
	}
	return Item{Status: StatusAvailable, Detail: fmt.Sprintf("%s check: %s (process checkpoint/restore; not used by forks yet)", filepath.Clean(path), lastLine(text))}
}

// criuReason picks the most telling lines of criu check's output: its
// errors without their source locations ("Error (criu/vdso.c:381): vdso:
// Unexpected rt vDSO area bounds" gives "vdso: Unexpected rt vDSO area
// bounds"), at most three, else its last line.
func criuReason(out string) string {
	var reasons []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "Error") {
			continue
		}
		if i := strings.Index(l, "): "); i >= 0 {
			l = l[i+3:]
		}
		if strings.HasPrefix(l, "exited, status=") {
			continue
		}
		reasons = append(reasons, l)
		if len(reasons) == 3 {
			break
		}
	}
	if len(reasons) == 0 {
		return lastLine(out)
	}
	return strings.Join(reasons, "; ")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no output"
	}
	return s
}
