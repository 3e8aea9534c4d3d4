// Package probe finds out which isolation and kill mechanisms of package
// process work on this machine: the checks behind `harnessd check` (and
// `harnessd serve --require`). It does not trust what the kernel claims: it
// starts throwaway process trees through a real process.Supervisor — a group
// member, a setsid escapee, an orphan — stops them as the daemon stops a
// harness, and checks that every one is gone.
//
// The probe children are the caller's own executable re-run with
// ChildCommand (so the probes need nothing else installed, not even a
// shell): a program using Run must dispatch ChildCommand to RunChild.
//
// The sandbox probe starts a throwaway sandbox through package
// process/sandbox, whose init is the same executable: a program using Run
// must also call sandbox.Init first thing in main.
//
// The package owns the probes, their verdicts and the Report. It reads
// /proc only through package process, except for the facts of the PID
// namespace and the user-namespace sysctls, which only it needs. It must not
// touch flags, output formatting or exit codes (cmd/harnessd's), and knows
// nothing of harnesses, sessions or MCP.
package probe
