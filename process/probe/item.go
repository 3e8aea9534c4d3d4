package probe

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Statuses of one mechanism.
const (
	StatusVerified  = "verified"  // exercised on this machine, and it worked
	StatusAvailable = "available" // present, not exercised
	StatusMissing   = "missing"   // absent or not permitted here
	StatusFailed    = "failed"    // present, but exercising it showed that it does not work
	StatusOff       = "off"       // disabled by configuration (--cgroup off, --subreaper off)
)

// Mechanism names, in report order. They are also what requirements name.
const (
	ProcessGroups = "process_groups"
	Pdeathsig     = "pdeathsig"
	Subreaper     = "subreaper"
	Cgroup        = "cgroup"
	Kill          = "kill"
	PTY           = "pty"
	PID1          = "pid1"
	Userns        = "userns"
	Sandbox       = "sandbox"
	DiskQuota     = "disk_quota"
	CRIU          = "criu"
)

// Names lists every mechanism in report order.
var Names = []string{ProcessGroups, Pdeathsig, Subreaper, Cgroup, Kill, PTY, PID1, Userns, Sandbox, DiskQuota, CRIU}

// Help says what each mechanism is for (check -h and docs/deploy.md).
var Help = map[string]string{
	ProcessGroups: "each harness tree in its own process group (or session), killed as one",
	Pdeathsig:     "direct children die with the daemon (PR_SET_PDEATHSIG), a last resort",
	Subreaper:     "orphans of a tree are re-parented to the daemon (PR_SET_CHILD_SUBREAPER), found and reaped",
	Cgroup:        "a cgroup v2 leaf per tree; cgroup.kill ends everything in it, however it forked",
	Kill:          "the live configuration ends a tree with a group member, a setsid escapee and an orphan",
	PTY:           "pseudo-terminals for interactive (TUI) harnesses",
	PID1:          "harnessd is PID 1 of its PID namespace: it reaps every orphan of the container",
	Userns:        "unprivileged user namespaces (a non-root daemon's sandboxes need them)",
	Sandbox:       "a harness tree in its own user, PID, mount, network, IPC and UTS namespaces (process/sandbox)",
	DiskQuota:     "a size-limited file system per episode for limits.disk (internal/quota: root, loop devices, mke2fs)",
	CRIU:          "process checkpoint/restore (criu check passes); optional, never required: forks go without it",
}

// Item is the finding for one mechanism.
type Item struct {
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Met reports whether a requirement on the item is satisfied.
func (c Item) Met() bool { return c.Status == StatusVerified || c.Status == StatusAvailable }

func failed(format string, args ...any) Item {
	return Item{Status: StatusFailed, Detail: fmt.Sprintf(format, args...)}
}

// Probe bounds.
const (
	probeTimeout   = 5 * time.Second
	treeTimeout    = 15 * time.Second // a tree kill may wait out DefaultKillWait
	sandboxTimeout = 10 * time.Second
	agentsTimeout  = 10 * time.Second
	probeChildLife = time.Minute // every probe child ends on its own after this
	probeGrace     = 200 * time.Millisecond
	endedWait      = 2 * time.Second // how long a killed pid may take to disappear
	overrunWait    = 2 * time.Second // how long an overrunning probe gets to notice its deadline
)

// runProbe runs f with a deadline and turns a panic or an overrun into a
// failed item: probes never take check down and never hang it.
func runProbe(timeout time.Duration, f func(ctx context.Context) Item) Item {
	return within(timeout, f, func(detail string) Item { return Item{Status: StatusFailed, Detail: detail} })
}

// within runs f under a deadline of timeout; a panic or an overrun becomes
// failed(detail). Every probe honours ctx, so its goroutine ends soon after
// the deadline; one that still does not is left to the process's exit after
// a further bound (check is a one-shot command).
func within[T any](timeout time.Duration, f func(ctx context.Context) T, failed func(detail string) T) T {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ch := make(chan T, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- failed(fmt.Sprintf("probe panicked: %v", r))
			}
		}()
		ch <- f(ctx)
	}()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
	}
	t := time.NewTimer(overrunWait)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		return failed(fmt.Sprintf("probe timed out after %s", timeout))
	}
}

// noteFor returns the supervisor note with prefix, without it.
func noteFor(notes []string, prefix string) string {
	for _, n := range notes {
		if v, ok := strings.CutPrefix(n, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
