package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrInvalidConfig is wrapped by Start's errors for a Config that can never
// work (a relative path, a NUL byte, a bad door name).
var ErrInvalidConfig = errors.New("invalid sandbox config")

// Bind makes a host path visible inside the sandbox.
type Bind struct {
	// Src is the host path (absolute).
	Src string `json:"src"`
	// Dst is the path inside; empty means the same as Src.
	Dst string `json:"dst,omitempty"`
	// Writable binds it read-write; otherwise it is read-only.
	Writable bool `json:"writable,omitempty"`
}

// Door is a listener the init opens on 127.0.0.1 inside the sandbox's
// network namespace and hands to the daemon.
type Door struct {
	// Name identifies the door ("mcp", "model").
	Name string `json:"name"`
	// Port is the port inside the namespace; 0 picks a free one. Every
	// sandbox has its own namespace, so a fixed port never collides.
	Port int `json:"port,omitempty"`
}

// Limits bound the sandbox's cgroup. Zero means no limit.
type Limits struct {
	// MemoryBytes is the memory limit (swap is limited to the same where
	// the host lets it be).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Pids bounds the tasks (processes and threads) of the whole sandbox,
	// the init's own (about ten) included.
	Pids int `json:"pids,omitempty"`
	// CPU is the CPU quota in cores (1.5 = one and a half cores).
	CPU float64 `json:"cpu,omitempty"`
}

func (l Limits) any() bool { return l.MemoryBytes > 0 || l.Pids > 0 || l.CPU > 0 }

// Storage bounds the sandbox's own file systems (tmpfs, devpts), which
// take host memory and kernel objects rather than disk. Zero fields take
// the defaults below; the harness gets ENOSPC at a bound.
type Storage struct {
	// TmpBytes bounds /tmp: DefaultTmpBytes, or half of Limits.MemoryBytes
	// when that is less.
	TmpBytes int64 `json:"tmp_bytes,omitempty"`
	// ShmBytes bounds /dev/shm: DefaultShmBytes, or a quarter of
	// Limits.MemoryBytes when that is less.
	ShmBytes int64 `json:"shm_bytes,omitempty"`
	// PTYs bounds the ptys of the sandbox's devpts (its max=):
	// DefaultPTYs.
	PTYs int `json:"ptys,omitempty"`
}

// Storage defaults. The root, /dev and hidden directories' tmpfs mounts
// hold only mount points and links and are read-only: they get a fixed
// small size (setupTmpfsSize).
const (
	DefaultTmpBytes = 1 << 30
	DefaultShmBytes = 64 << 20
	DefaultPTYs     = 64
)

// resolved fills in the defaults.
func (st Storage) resolved(l Limits) Storage {
	pick := func(v, def, fromMem int64) int64 {
		if v > 0 {
			return v
		}
		if fromMem > 0 && fromMem < def {
			return fromMem
		}
		return def
	}
	st.TmpBytes = pick(st.TmpBytes, DefaultTmpBytes, l.MemoryBytes/2)
	st.ShmBytes = pick(st.ShmBytes, DefaultShmBytes, l.MemoryBytes/4)
	if st.PTYs <= 0 {
		st.PTYs = DefaultPTYs
	}
	return st
}

// IDMode selects the user namespace's id maps.
type IDMode string

// ID modes.
const (
	// IDAuto maps a private host range as root and the single id the
	// kernel allows otherwise.
	IDAuto IDMode = ""
	// IDRange maps inside 0–65535 to a private host range (root only).
	IDRange IDMode = "range"
	// IDSelf maps inside 0 to the daemon's own uid and gid (setgroups
	// denied): the only map an unprivileged daemon may write.
	IDSelf IDMode = "self"
)

// Config describes a sandbox. The harness's command comes later, with Run.
type Config struct {
	// Init is the binary re-executed as the init; empty means
	// /proc/self/exe. It must call Init first thing in main (or TestMain).
	Init string
	// Name labels the sandbox in errors and its cgroup's name.
	Name string
	// Hostname is the UTS name inside; empty means "sandbox".
	Hostname string

	// Workspace and Home are host directories bound read-write inside
	// (empty: none) at WorkspaceDst and HomeDst (empty: their own paths).
	Workspace, Home, WorkspaceDst, HomeDst string
	// WorkspaceAt also binds Workspace read-write at this fixed path inside
	// (e.g. "/app").
	WorkspaceAt string
	// Hide lists host paths covered inside: a directory by an empty
	// read-only tmpfs, a file by an empty read-only file (the daemon's
	// workspace root, its state directories, token files). Workspace and
	// Home may lie under a hidden directory.
	Hide []string
	// Binds are further host paths made visible.
	Binds []Bind

	// Doors are the listeners to open inside.
	Doors []Door
	// HostNetwork keeps the host's network namespace (no CLONE_NEWNET):
	// the harness then reaches whatever the host reaches, the daemon's own
	// listeners included. It gives up the network boundary; only an
	// explicit "egress: host" policy asks for it.
	HostNetwork bool

	// IDs selects the id maps; IDBase, when non-zero, is the first host id
	// of the range (IDRange); otherwise a free range of Ranges (nil:
	// DefaultRanges) is used for the sandbox's lifetime.
	IDs    IDMode
	IDBase uint32
	Ranges *Ranges
	// UID and GID are the harness's ids inside; nil means 1000 with a range
	// mapped, 0 with the single map.
	UID, GID *int

	// Seccomp installs the deny-list (internal/linux/seccomp) on the harness.
	Seccomp bool
	// Limits bound the sandbox's cgroup; CgroupParent overrides where its
	// cgroup is made (a v2 directory; v1 uses each controller's own
	// cgroup of the daemon).
	Limits       Limits
	CgroupParent string
	// Storage bounds /tmp, /dev/shm and the ptys (zero: the defaults).
	Storage Storage

	// Stdin, Stdout and Stderr become the init's and the harness's stdio
	// (nil: /dev/null). TTY says stdin is a terminal that becomes the
	// harness's controlling terminal.
	Stdin, Stdout, Stderr *os.File
	TTY                   bool
}

// Command is what Run executes inside the sandbox (its paths inside).
type Command struct {
	// Path is the program; without a slash it is looked up in Env's PATH.
	Path string `json:"path"`
	// Args are the arguments after the program name.
	Args []string `json:"args,omitempty"`
	// Env is the harness's complete environment (never the daemon's).
	Env []string `json:"env,omitempty"`
	// Dir is the working directory inside; empty: the workspace's, or "/".
	Dir string `json:"dir,omitempty"`
	// TTY says Stdin is a terminal that becomes the harness's controlling
	// terminal (Config.TTY says the same for the init's own stdio).
	TTY bool `json:"tty,omitempty"`

	// Stdin, Stdout and Stderr, when set, become the harness's stdio in
	// place of the init's (Config.Stdin…): they are passed to the init with
	// the command (SCM_RIGHTS), so the daemon can create them after the
	// sandbox and its doors exist. The caller keeps and closes its copies.
	Stdin, Stdout, Stderr *os.File `json:"-"`
}

// stdio lists the set stdio files of cmd and their names, in order.
func (cmd *Command) stdio() (names []string, files []*os.File) {
	for i, f := range []*os.File{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f != nil {
			names = append(names, stdioNames[i])
			files = append(files, f)
		}
	}
	return names, files
}

// stdioNames name the harness's stdio files in a go message.
var stdioNames = [3]string{"stdin", "stdout", "stderr"}

func checkPath(what, p string) error {
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%w: %s contains a NUL byte", ErrInvalidConfig, what)
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%w: %s %q is not absolute", ErrInvalidConfig, what, p)
	}
	return nil
}

func (c *Config) validate() error {
	for _, p := range []struct{ what, path string }{{"workspace", c.Workspace}, {"home", c.Home}, {"workspace_at", c.WorkspaceAt},
		{"workspace_dst", c.WorkspaceDst}, {"home_dst", c.HomeDst}} {
		if p.path != "" {
			if err := checkPath(p.what, p.path); err != nil {
				return err
			}
		}
	}
	if (c.WorkspaceAt != "" || c.WorkspaceDst != "") && c.Workspace == "" {
		return fmt.Errorf("%w: workspace_at without a workspace", ErrInvalidConfig)
	}
	for _, h := range c.Hide {
		if err := checkPath("hidden path", h); err != nil {
			return err
		}
		if filepath.Clean(h) == "/" {
			return fmt.Errorf("%w: cannot hide /", ErrInvalidConfig)
		}
	}
	for _, b := range c.Binds {
		if err := checkPath("bind source", b.Src); err != nil {
			return err
		}
		if b.Dst != "" {
			if err := checkPath("bind target", b.Dst); err != nil {
				return err
			}
		}
	}
	seen := map[string]bool{}
	for _, d := range c.Doors {
		if d.Name == "" || strings.ContainsAny(d.Name, "\x00/ ") {
			return fmt.Errorf("%w: bad door name %q", ErrInvalidConfig, d.Name)
		}
		if seen[d.Name] {
			return fmt.Errorf("%w: door %q given twice", ErrInvalidConfig, d.Name)
		}
		seen[d.Name] = true
		if d.Port < 0 || d.Port > 65535 {
			return fmt.Errorf("%w: door %q: port %d out of range", ErrInvalidConfig, d.Name, d.Port)
		}
	}
	if strings.IndexByte(c.Hostname, 0) >= 0 || len(c.Hostname) > 64 {
		return fmt.Errorf("%w: bad hostname %q", ErrInvalidConfig, c.Hostname)
	}
	if c.Limits.MemoryBytes < 0 || c.Limits.Pids < 0 || c.Limits.CPU < 0 {
		return fmt.Errorf("%w: negative limit", ErrInvalidConfig)
	}
	if c.Storage.TmpBytes < 0 || c.Storage.ShmBytes < 0 || c.Storage.PTYs < 0 {
		return fmt.Errorf("%w: negative storage bound", ErrInvalidConfig)
	}
	switch c.IDs {
	case IDAuto, IDRange, IDSelf:
	default:
		return fmt.Errorf("%w: unknown id mode %q", ErrInvalidConfig, c.IDs)
	}
	return nil
}

func (cmd *Command) validate() error {
	if cmd.Path == "" {
		return fmt.Errorf("%w: no program given", ErrInvalidConfig)
	}
	all := append(append([]string{cmd.Path, cmd.Dir}, cmd.Args...), cmd.Env...)
	for _, s := range all {
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%w: the command contains a NUL byte", ErrInvalidConfig)
		}
	}
	return nil
}

// coveredByWorkspace refuses a program under WorkspaceAt: the workspace is
// mounted there, over the host's directory, so the program would not be
// found (a task's WORKDIR /work over a checkout under /work).
func (c *Config) coveredByWorkspace(prog string) error {
	at := filepath.Clean(c.WorkspaceAt)
	if c.WorkspaceAt == "" || !filepath.IsAbs(prog) || at == "/" {
		return nil
	}
	if p := filepath.Clean(prog); p == at || strings.HasPrefix(p, at+"/") {
		return fmt.Errorf("%w: the program %s is under %s, where the episode's workspace is mounted (the task's WORKDIR), which covers it inside the sandbox: install it outside %s or give the task another WORKDIR", ErrInvalidConfig, prog, at, at)
	}
	return nil
}
