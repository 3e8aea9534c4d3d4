// Package sandbox runs one harness tree in fresh user, PID, mount, network,
// IPC and UTS namespaces, under a small init of its own (or the daemon's
// binary re-executed, as runc does), with the doors — the listeners the daemon
// serves the tool bridge and the model gateway on — opened inside the
// sandbox's network namespace and passed to the daemon as file descriptors.
//
// Host side, Start executes the init binary — Config.Init if set, else the
// small init embedded in harnessd (cmd/harnessd-sandbox-init, written once
// to a read-only file of the daemon's own: package initfile), else
// /proc/self/exe — with CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|
// CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS and Pdeathsig SIGKILL, through a
// long-lived spawner process of that binary (internal/spawner: its fork is
// a small process's, not the daemon's), maps a
// private host id range per sandbox (as root) or the daemon's own uid (not
// as root), places the init in a cgroup with the configured limits, and talks
// to it over a control socket (fd 3 in the init): a JSON spec goes in, the
// door listeners (SCM_RIGHTS) and each run's exit status come back.
// Start returns once the sandbox is fully set up; Run starts a harness with
// its command, environment (which may name the doors' addresses) and stdio
// (passed with the command, SCM_RIGHTS). A sandbox runs one harness at a
// time and may run several in turn (one per turn of a one-shot CLI, then a
// grader); Launcher adapts Run to process.Spec.Launcher, translating the
// daemon's host paths in the command into where the binds show them inside
// (Inside).
//
// Inside, Init (called first thing by main, and by tests from TestMain)
// brings lo up, opens the doors on 127.0.0.1, builds the new root (the
// host's / read-only, hidden paths under empty tmpfs, the workspace and
// HOME writable, private /tmp, a fresh /proc, a minimal /dev with its own
// devpts, an empty read-only /sys), pivots into it, sets the hostname and
// waits for a go. Each go brings a run's command and stdio; the init forks
// the harness from a locked thread that has emptied its bounding,
// inheritable and ambient capability sets and set no_new_privs, the
// Landlock scope and the optional seccomp deny-list (all per thread, all
// inherited); the child takes a session of its own and the harness's uid
// and gid, and executes the harness with exactly the given environment.
// The init reaps every process of the namespace and forwards SIGTERM,
// SIGINT and SIGHUP to the harness's process group; when the run's harness
// exits it kills every other process of the namespace (kill(-1) from PID 1)
// and reports the exact exit status. When the init dies — SIGKILL from
// Close, or the daemon's death (Pdeathsig) — every process of the
// namespace dies with it.
//
// Between tenants (a session's episodes) Recycle puts a sandbox back to
// new: the init kills and reaps what is left, ends every socket of its
// network namespace, removes every IPC object, mounts a new /tmp and
// /dev/shm and resets its pid counter, checking each (package
// internal/tenancy, internal/linux/sockdiag and internal/linux/ipcns do
// the work); the files below the binds are the caller's to empty.
//
// Start runs in named phases (ids, cgroup, binds, spawn, handshake), each
// with its own undo, undone in reverse when a later one fails. Every tmpfs
// of the sandbox has a size= and its devpts a max= (Config.Storage), and
// the host's socket directories (/run, ...) are hidden.
//
// The package owns the namespaces, the mounts, the id maps, when the
// seccomp filter (internal/linux/seccomp) is installed, and the sandbox's
// cgroup (v2 when its controllers are there, v1 on hybrid hosts; the files
// are internal/linux/cgroups'). It must not touch sessions, adapters, the bridge or
// the gateway, and package process must not depend on it: process makes
// the pipes and hands their child ends to Run through the Launcher, so
// readiness, line limits and the stderr tail work unchanged.
package sandbox
