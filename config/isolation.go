package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
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
	// AllowPrivate lets the egress proxy (egress: allow) reach private and
	// shared addresses (RFC 1918, 100.64.0.0/10, fc00::/7) an allowed host
	// resolves to: an internal mirror. Off (default), such a destination is
	// refused as loopback is, so that a name the harness can steer (a
	// wildcard's subdomain, DNS it controls) cannot reach a pod, service or
	// host of the daemon's own network. Loopback, link-local (cloud
	// metadata) and this host's own addresses are refused either way.
	AllowPrivate bool `yaml:"allow_private" json:"allow_private,omitempty"`
	// TaskMCPPrivate lets a task's mcp_servers url (which the daemon
	// dials) name a loopback or private address or one of this host's own,
	// for testing a taskset against servers run locally. Off, such a URL
	// is refused as the egress proxy refuses it; link-local (cloud
	// metadata), multicast and unspecified addresses are refused either way.
	TaskMCPPrivate bool `yaml:"task_mcp_private" json:"task_mcp_private,omitempty"`
}

// EgressPolicy returns the effective policy (none when unset).
func (n NetworkConfig) EgressPolicy() string {
	if n.Egress == "" {
		return EgressNone
	}
	return n.Egress
}

// EgressOptions are the egress proxy's options the policy makes, nil
// unless Egress is allow: its allow list, private and shared addresses
// refused unless AllowPrivate, and this host's own addresses refused
// always. The harness's proxy, a grader's and the oracle's grader's are
// made from them (each adds its own observer).
func (n NetworkConfig) EgressOptions() *egress.Options {
	if n.EgressPolicy() != EgressAllow {
		return nil
	}
	return &egress.Options{Policy: egress.Policy{Allow: n.Allow}, Deny: egress.DenyList(n.AllowPrivate), DenyAddrs: egress.HostAddrs()}
}

// SandboxConfig is what a sandboxed harness sees of the host.
type SandboxConfig struct {
	// ReadOnly lists host paths (files or directories, "~" for the
	// daemon's HOME) bound read-only into every sandbox, for what the
	// daemon does not resolve from the harness's command itself (a data
	// directory, an interpreter a wrapper script names). A path that is
	// or holds what the sandbox hides (the daemon's HOME as a whole, the
	// record directory, the workspace root, the token and configuration
	// files) is refused.
	ReadOnly []string `yaml:"read_only" json:"read_only,omitempty"`
	// Reuse hands an episode's sandbox on to a later episode of the same
	// session, recycled in between (every process, socket, IPC object and
	// file of the last episode gone, the pid counter reset; any check
	// failing ends the sandbox instead), where nothing about it differs:
	// no taskset, episodes that take the session's disks in turn. nil
	// means true; false starts a new sandbox for every episode.
	Reuse *bool `yaml:"reuse" json:"reuse,omitempty"`
}

// Reused reports whether sandbox.reuse is on (the default).
func (c SandboxConfig) Reused() bool { return c.Reuse == nil || *c.Reuse }

// normalizeSandbox expands "~" in sandbox.read_only and refuses what can
// be told here: relative paths, /, the daemon's HOME itself, and what
// holds the record directory or the workspace root (the session refuses
// the token and configuration files too).
func (c *Config) normalizeSandbox() []error {
	var errs []error
	home, _ := os.UserHomeDir()
	for i, p := range c.Sandbox.ReadOnly {
		if p == "~" || strings.HasPrefix(p, "~/") {
			if home == "" {
				errs = append(errs, fmt.Errorf("sandbox.read_only[%d] %q: the daemon has no HOME to expand ~ to", i, p))
				continue
			}
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			errs = append(errs, fmt.Errorf("sandbox.read_only[%d] %q: want an absolute path (or ~/…)", i, p))
			continue
		}
		p = filepath.Clean(p)
		c.Sandbox.ReadOnly[i] = p
		if reason := c.exposureRefused(p, home); reason != "" {
			errs = append(errs, fmt.Errorf("sandbox.read_only[%d] %q: %s; name a directory inside it instead", i, p, reason))
		}
	}
	if len(c.Sandbox.ReadOnly) > 0 && c.Isolation == IsolationProcess {
		errs = append(errs, errors.New("sandbox.read_only needs isolation: sandbox (a process-isolated harness sees the host's files)"))
	}
	return errs
}

// exposureRefused says why the host path p may never be bound into a
// sandbox ("" when it may): it is /, the daemon's HOME (home) itself or an
// ancestor of it, or it is, is inside or holds the record directory or the
// workspace root.
func (c *Config) exposureRefused(p, home string) string {
	p = filepath.Clean(p)
	holds := func(dir, q string) bool {
		return dir == q || dir == "/" || strings.HasPrefix(q, dir+"/")
	}
	switch {
	case p == "/":
		return "it is the host's whole file system"
	case home != "" && home != "/" && holds(p, filepath.Clean(home)):
		return "it is or holds the daemon's HOME, which the sandbox hides as a whole"
	}
	for _, h := range []struct{ path, what string }{{c.RecordDir, "the record directory (record_dir)"}, {c.WorkspaceRoot(), "the workspace root, which holds every session's directories"}} {
		if h.path == "" {
			continue
		}
		hp := filepath.Clean(h.path)
		if holds(p, hp) || holds(hp, p) {
			return "it is, is inside or holds " + h.what
		}
	}
	return ""
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
		if n.AllowPrivate {
			errs = append(errs, fmt.Errorf("network.allow_private needs network.egress: %s (it widens the egress proxy's reach)", EgressAllow))
		}
	case EgressAllow:
		if len(n.Allow) == 0 {
			errs = append(errs, errors.New("network.egress: allow needs hosts in network.allow"))
		}
		if err := checkAllowList(n.Allow, n.AllowPrivate); err != nil {
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
// Without allowPrivate, an IP literal in a private range is refused here
// rather than at each connection.
func checkAllowList(allow []string, allowPrivate bool) error {
	pats, err := egress.Policy{Allow: allow}.Patterns()
	if err != nil {
		return fmt.Errorf("network.allow: %s", strings.TrimPrefix(err.Error(), "egress: "))
	}
	for _, p := range pats {
		if !allowPrivate && p.Addr.IsValid() && egress.IsPrivate(p.Addr) {
			return fmt.Errorf("network.allow: %s is a private address, which the egress proxy refuses unless network.allow_private: true", p.Addr)
		}
	}
	return nil
}
