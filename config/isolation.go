package config

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/internal/units"
)

// Isolation levels (docs/security.md).
const (
	// IsolationSandbox runs each harness tree in its own user, PID, mount,
	// network, IPC and UTS namespaces (package process/sandbox): its only
	// ways out are the tool bridge, the model gateway and, with an allow
	// policy, the egress proxy.
	IsolationSandbox = "sandbox"
	// IsolationProcess runs the harness as the daemon's child in its own
	// process group and cgroup, with the environment allowlist and the
	// orchestration listener's peer check: a filter, not a wall.
	IsolationProcess = "process"
)

// Network egress policies of a sandboxed harness.
const (
	// EgressNone (the default): only the doors, nothing else.
	EgressNone = "none"
	// EgressAllow: the hosts of network.allow through the daemon's HTTP(S)
	// proxy, served inside the sandbox.
	EgressAllow = "allow"
	// EgressHost: the host's network namespace. It gives up the network
	// boundary (the orchestration listener is reachable); opt-in only.
	EgressHost = "host"
)

// LimitsConfig bounds a sandboxed harness tree (its cgroup) and, in either
// isolation, the episode's storage. Zero means no limit.
type LimitsConfig struct {
	// Memory bounds the tree's memory (and swap, where the host allows).
	Memory units.ByteSize `yaml:"memory" json:"memory,omitempty"`
	// Pids bounds the tree's tasks (processes and threads), the sandbox's
	// init (about ten) included.
	Pids int `yaml:"pids" json:"pids,omitempty"`
	// CPU is a quota in cores (1.5 = one and a half).
	CPU float64 `yaml:"cpu" json:"cpu,omitempty"`
	// Disk bounds what an episode may write to its workspace, HOME and
	// TMPDIR together (a file system of that size per episode, in either
	// isolation; docs/security.md). Unset means DefaultDisk where the host
	// can make one (root, loop devices, mke2fs), else none with a warning;
	// 0 turns it off; a size set here is required.
	Disk *units.ByteSize `yaml:"disk" json:"disk,omitempty"`
}

// DefaultDisk is limits.disk when the configuration leaves it unset.
const DefaultDisk = 10 << 30

// minDisk is the smallest limits.disk (the file system's own metadata).
const minDisk = 1 << 20

// DiskQuota returns the per-episode storage bound in bytes (0: none) and
// whether the configuration set it; an unset one is DefaultDisk, applied
// only where the host can.
func (l LimitsConfig) DiskQuota() (bytes int64, explicit bool) {
	if l.Disk == nil {
		return DefaultDisk, false
	}
	return int64(*l.Disk), true
}

// Any reports whether any limit of the harness tree's cgroup is set
// (memory, pids, cpu: the sandbox's); limits.disk is not one of them.
func (l LimitsConfig) Any() bool { return l.Memory > 0 || l.Pids > 0 || l.CPU > 0 }

// NetworkConfig is a sandboxed harness's network policy.
type NetworkConfig struct {
	// Egress is none (default), allow or host.
	Egress string `yaml:"egress" json:"egress,omitempty"`
	// Allow lists the host patterns reachable through the egress proxy
	// (egress: allow): "pypi.org", "*.github.com", "host:port".
	Allow []string `yaml:"allow" json:"allow,omitempty"`
}

// EgressPolicy returns the effective policy (none when unset).
func (n NetworkConfig) EgressPolicy() string {
	if n.Egress == "" {
		return EgressNone
	}
	return n.Egress
}

// validateIsolation checks isolation, limits and network.
func (c *Config) validateIsolation() []error {
	var errs []error
	switch c.Isolation {
	case "", IsolationSandbox, IsolationProcess:
	default:
		errs = append(errs, fmt.Errorf("isolation must be %s or %s, not %q", IsolationSandbox, IsolationProcess, c.Isolation))
	}
	l := c.Limits
	if l.Memory < 0 {
		errs = append(errs, errors.New("limits.memory must not be negative"))
	} else if l.Memory > 0 && l.Memory < 4<<20 {
		errs = append(errs, fmt.Errorf("limits.memory %d bytes is too small for any harness (at least 4MiB)", int64(l.Memory)))
	}
	if l.Pids < 0 {
		errs = append(errs, errors.New("limits.pids must not be negative"))
	} else if l.Pids > 0 && l.Pids < 16 {
		errs = append(errs, fmt.Errorf("limits.pids %d leaves no room for the sandbox's init and a harness (at least 16)", l.Pids))
	}
	if l.CPU < 0 || math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0) {
		errs = append(errs, errors.New("limits.cpu must be a positive number of cores"))
	}
	if d, _ := l.DiskQuota(); d < 0 {
		errs = append(errs, errors.New("limits.disk must not be negative"))
	} else if d > 0 && d < minDisk {
		errs = append(errs, fmt.Errorf("limits.disk %d bytes is too small for a file system (at least 1MiB; 0 turns it off)", d))
	}
	n := c.Network
	switch n.Egress {
	case "", EgressNone, EgressHost:
		if len(n.Allow) > 0 {
			errs = append(errs, fmt.Errorf("network.allow needs network.egress: %s", EgressAllow))
		}
	case EgressAllow:
		if len(n.Allow) == 0 {
			errs = append(errs, errors.New("network.egress: allow needs hosts in network.allow"))
		}
		if err := checkAllowList(n.Allow); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("network.egress must be %s, %s or %s, not %q", EgressNone, EgressAllow, EgressHost, n.Egress))
	}
	if c.Isolation == IsolationProcess {
		if l.Any() {
			errs = append(errs, errors.New("limits need isolation: sandbox (process isolation has no per-tree limits)"))
		}
		if n.Egress != "" && n.Egress != EgressHost {
			errs = append(errs, errors.New("network.egress needs isolation: sandbox (a process-isolated harness has the host's network)"))
		}
	}
	if m := c.Workspace.MountAt; m != "" && (!strings.HasPrefix(m, "/") || m == "/" || strings.ContainsRune(m, 0)) {
		errs = append(errs, fmt.Errorf("workspace.mount_at must be an absolute path other than /, not %q", m))
	}
	return errs
}

// checkAllowList validates network.allow with the egress proxy's own parser.
func checkAllowList(allow []string) error {
	if _, err := egress.ParsePolicy(allow); err != nil {
		return fmt.Errorf("network.allow: %s", strings.TrimPrefix(err.Error(), "egress: "))
	}
	return nil
}
