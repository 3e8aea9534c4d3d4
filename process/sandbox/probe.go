package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/internal/linux/landlock"
)

// ProbeResult says whether sandboxes can be made on this host.
type ProbeResult struct {
	// OK reports that a sandbox was started, ran its harness alone in its
	// PID namespace, and ended with it.
	OK bool `json:"ok"`
	// IDs is the id mode a sandbox gets here (IDRange as root, else IDSelf).
	IDs IDMode `json:"ids"`
	// Missing reports that the host refused (no permission for the
	// namespaces or their mounts) rather than that a sandbox misbehaved.
	Missing bool `json:"missing,omitempty"`
	// Detail is one line: what was verified, or what is missing.
	Detail string `json:"detail"`
}

// Probe starts a throwaway sandbox from init (empty: /proc/self/exe; the
// binary must call Init) whose harness is init itself re-executed as a
// probe child, and reports whether it worked and, when not, what is
// missing. It never panics and leaves nothing behind.
func Probe(ctx context.Context, init string) (res ProbeResult) {
	res.IDs = IDSelf
	if os.Geteuid() == 0 {
		res.IDs = IDRange
	}
	defer func() {
		if r := recover(); r != nil {
			res = ProbeResult{IDs: res.IDs, Detail: fmt.Sprintf("sandbox probe panicked: %v", r)}
		}
	}()
	// The probe's stderr is kept to explain a failure.
	r, w, err := os.Pipe()
	if err != nil {
		res.Detail = "sandbox probe: " + err.Error()
		return res
	}
	stderr := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 4096))
		io.Copy(io.Discard, r)
		r.Close()
		stderr <- strings.TrimSpace(string(b))
	}()
	sb, err := Start(ctx, Config{Init: init, Name: "probe", Stderr: w})
	w.Close()
	if err != nil {
		res.Detail, res.Missing = probeDetail(err), refused(err)
		return res
	}
	defer sb.Close()
	if _, err := sb.Run(ctx, Command{Path: "/proc/self/exe", Args: []string{probeCommand}}); err != nil {
		res.Detail = probeDetail(err)
		return res
	}
	exit, err := sb.Wait(ctx)
	if err != nil {
		res.Detail = "the probe sandbox did not end: " + err.Error()
		return res
	}
	if exit.InitDied || exit.Status.Code != 0 {
		sb.Close()
		res.Detail = fmt.Sprintf("the probe harness in the sandbox failed (%s): %s", exit.Status, <-stderr)
		return res
	}
	res.OK = true
	res.Detail = fmt.Sprintf("user, PID, mount, network, IPC and UTS namespaces; ids: %s; limits: %s; abstract sockets: %s", res.IDs, probeLimits(), probeScope())
	return res
}

// probeLimits says which cgroup a sandbox's limits would use, making and
// removing a scratch one.
func probeLimits() string {
	l := Limits{MemoryBytes: 64 << 20, Pids: 64, CPU: 1}
	cs, err := newCgroupSet(fmt.Sprintf("harnessd-sandbox-probe-%d-%s", os.Getpid(), randomID()), "", l)
	if err != nil {
		return "unavailable (" + err.Error() + ")"
	}
	defer cs.remove()
	if err := cs.apply(l); err != nil {
		return "unavailable (" + err.Error() + ")"
	}
	return "cgroup " + cs.version + " (memory, pids, cpu)"
}

// probeScope says whether the harness's abstract Unix sockets are scoped
// (Landlock ABI 6+), which matters for a sandbox on the host's network.
func probeScope() string {
	if abi := landlock.ABI(); abi >= 6 {
		return fmt.Sprintf("scoped (Landlock ABI %d)", abi)
	} else if abi > 0 {
		return fmt.Sprintf("the network namespace's only (Landlock ABI %d < 6)", abi)
	}
	return "the network namespace's only (no Landlock)"
}

// refused reports a setup error that means the host does not permit
// sandboxes, as opposed to one that went wrong.
func refused(err error) bool {
	var se *SetupError
	if !errors.As(err, &se) {
		return false
	}
	return se.Stage == StageClone || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(se.Err.Error(), "operation not permitted") || strings.Contains(se.Err.Error(), "permission denied")
}

func probeDetail(err error) string {
	var se *SetupError
	if errors.As(err, &se) {
		return se.Error()
	}
	return "sandbox start failed: " + err.Error()
}
