// Package episode owns everything one episode opens: its private
// directories (workspace, HOME, TMPDIR) on their disk quota (limits.disk:
// a file system of their own, internal/quota), its sandbox and the sandbox's
// doors, the tool bridge with its per-episode tool servers, the model
// gateway, the egress proxy, the task's files, and the started harness.
//
// Open builds an Episode in named stages up to a readiness Level; every
// stage pushes its undo onto one stack of closers, and Close (or Stop,
// which keeps the directories) runs that stack once, in reverse, whatever
// path ends the episode. A Pool keeps episodes prepared ahead of the
// resets that will take them: at LevelSandbox (directories and a sandbox,
// nothing of the next episode yet) or, with a harness started, as a
// standby.
//
// Episode.Snapshot takes a frozen copy of an episode's directories between
// turns (snapshot.go: its quota image frozen and cloned, reflinked where
// the host allows, else its data extents copied; without a quota the trees
// copied, package internal/treecopy); Spec.From opens episodes from one
// instead of the template, for the siblings of a fork; Checkpoints keeps a
// bounded store of them by turn (checkpoints.go).
//
// Env is what a session's episodes share: the configuration, the
// supervisor, the isolation, the persistent tool sources and the paths a
// sandbox hides or exposes (computed by package episode/exposure, which also
// explains a sandboxed harness's start-up failure: ExplainSandboxed).
//
// It also owns the side sandboxes (side.go): everything else the daemon
// runs on an episode's data — a command rubric (Episode.RubricSandbox), a
// stdio tool server of the environment or the task, the simulated user's
// program (Episode.StartUser, user.go) — runs in a sandbox of
// its own with the harness's restrictions or stricter, never on the host,
// unless a tool entry says isolation: host (or the harness itself runs on
// the host, in process isolation). Graders run in package tasks' own.
//
// For a fork (snapshot.go, checkpoints.go, fork.go) it takes a frozen
// copy of the directories between turns (Snapshot: the quota image cloned
// or its data copied, or the trees), opens episodes from it (Spec.From),
// keeps per-turn checkpoints, and opens a sibling's doors with the
// parent's model calls and tool records (Spec.ModelHistory, ModelReplay,
// ToolReplay, ToolInherit).
//
// The package is bigger than 3,000 lines: an episode's resources are
// opened and closed on one stack of undos (closers.go) in one order, and a
// snapshot, the disk a session reuses and the sandbox's view of the
// directories all act on the same directories at the same stages; the
// parts that stand alone are packages of their own (internal/quota,
// internal/treecopy, internal/pathmap, episode/exposure, process/sandbox).
//
// The package must not know about turns, rewards, trajectories or the
// trainer's connection (package session), nor about any harness protocol
// (the adapters): it starts a harness through the harness.Adapter
// contract only.
package episode
