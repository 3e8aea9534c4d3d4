// Package process supervises one child process tree per harness run.
//
// A Process is started by a Supervisor in its own process group (pipes) or in a
// new session with a controlling pseudo-terminal (PTY). The package owns
// everything about the tree's lifetime: the child's environment (an explicit
// list, never the daemon's whole environment), readiness gating over its
// output, bounded stdout lines and a bounded stderr tail, and a Stop that
// terminates every process the tree made, including ones that called setsid
// to escape the group.
//
// Kill mechanisms are detected when a Supervisor is created and degrade
// cleanly: a cgroup v2 leaf per tree (cgroup.kill catches everything) when
// the cgroup filesystem is writable; the daemon as child subreaper, so that
// orphans are re-parented to it and can be found, killed and reaped; and the
// process group (or session) kill that is always available. Pdeathsig makes
// direct children die with the daemon as a last resort.
//
// With the subreaper enabled, every child of the daemon must be started
// through this package: orphans re-parented to the daemon are reaped by pid,
// and only pids this package did not start are treated as orphans.
//
// Every child is reaped by one mechanism: its pidfd is registered with the
// Go runtime's poller and the child is reaped with wait4 once it becomes
// readable, so a live child costs a parked goroutine, not an OS thread
// blocked in waitid. A start builds a fresh exec.Cmd per attempt (a start
// refused by CLONE_INTO_CGROUP is retried without the cgroup) and names the
// cause of a failure: ErrInvalidSpec for NUL bytes, "too many open files"
// for EMFILE/ENFILE, the program for ENOENT/EACCES.
//
// Each Supervisor locks its cgroup directory for its lifetime; at start it
// sweeps the directories of daemons that are gone (see docs/deploy.md).
// That directory, its leaves and the sweep are the internal subpackage
// cgtree's; reading /proc and cgroup files is internal/linux/procfs's and
// internal/linux/cgroups', sock_diag internal/linux/sockdiag's.
//
// The package owns the trees: their scans, their cgroup leaves, and the peer lookup
// of a loopback connection (Supervisor.PeerOf: the socket's cgroup through
// sock_diag netlink plus the tracker's record of members that left their
// leaf, or, without cgroup leaves, the trees' members by ancestry; never
// the environment). Subpackage probe verifies the mechanisms on the running
// machine (harnessd check). Signals and cgroup.kill go only to trees this
// package started (a launched leader, a leaf directly inside a
// harnessd-<pid>-<instance> directory, recorded pids with their start
// times), never to a cgroup or pid it merely found.
//
// The package knows nothing of MCP, harness protocols or sessions.
package process
