// Package sandbox runs one harness tree in fresh user, PID, mount, network,
// IPC and UTS namespaces, under a small init that is the daemon's own binary
// re-executed (as runc does), with the doors — the listeners the daemon
// serves the tool bridge and the model gateway on — opened inside the
// sandbox's network namespace and passed to the daemon as file descriptors.
//
// Host side, Start re-executes the init binary (/proc/self/exe unless
// Config.Init names another) with CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|
// CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS and Pdeathsig SIGKILL, maps a
// private host id range per sandbox (as root) or the daemon's own uid (not
// as root), places the init in a cgroup with the configured limits, and talks
// to it over a control socket (fd 3 in the init): a JSON spec goes in, the
// door listeners (SCM_RIGHTS) and the harness's exit status come back.
// Start returns once the sandbox is fully set up; Run releases the harness
// with its command and environment (which may name the doors' addresses).
//
// Inside, Init (called first thing by main, and by tests from TestMain)
// brings lo up, opens the doors on 127.0.0.1, builds the new root (the
// host's / read-only, hidden paths under empty tmpfs, the workspace and
// HOME writable, private /tmp, a fresh /proc, a minimal /dev with its own
// devpts, an empty read-only /sys), pivots into it, sets the hostname and
// waits for the go. It then starts the harness through a second stage of
// the same binary that drops to the harness's uid and gid, clears every
// capability and the bounding set, sets no_new_privs, installs the
// optional seccomp deny-list, applies rlimits and execs the harness with
// exactly the given environment. The init reaps every process of the
// namespace, forwards SIGTERM, SIGINT and SIGHUP to the harness's process
// group, reports the harness's exact exit status and exits, which ends
// every other process of the namespace.
//
// The package owns the namespaces, the mounts, the id maps, the seccomp
// program and the sandbox's cgroup (v2 when its controllers are there, v1
// on hybrid hosts). It must not touch sessions, adapters, the bridge or
// the gateway, and package process must not depend on it: process will
// call Start with the child ends of its pipes (Config.Stdin, Stdout,
// Stderr), so readiness, line limits and the stderr tail work unchanged.
package sandbox
