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
// The package knows nothing of MCP, harness protocols or sessions.
package process
