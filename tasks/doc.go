// Package tasks owns tasksets: loading tasks in Harbor's format (a
// directory per task: task.toml, instruction.md, environment/Dockerfile and
// the files it copies, tests/, solution/), from a JSONL file (one task
// per line) and from a dataset's Parquet files (one task per row, through
// a column mapping: parquet.go), validating them, picking one for an
// episode (by id, index or seed), preparing an episode's workspace from a task's environment files,
// and grading the workspace afterwards: the task's tests run in a fresh
// sandbox (package process/sandbox) with the workspace at the task's
// working directory, and their reward file becomes the reward — unless a
// process other than the tests' own leader wrote it (watch.go: a fanotify
// mark on the sandbox's own /logs/verifier mount), when it is withheld
// and the writers are reported.
//
// It must not touch sessions, adapters, the bridge or the gateway: the
// harness package decides when an episode is prepared and graded and
// passes the directories. tests/ and solution/ are never copied into a
// workspace; Grade and Solve copy them into a private scratch directory
// that only their own sandbox sees, and only after the caller has stopped
// the harness.
//
// The package is bigger than 3,000 lines: it reads three task formats
// (Harbor's directories with the whole of Harbor's task.toml — users,
// network policies, [[steps]], the separate verifier — JSONL lines and
// Parquet rows) into one Task whose unexported parts (copies, tests and
// solution directories, graders, steps' directories) its preparation and
// grading use directly; splitting the formats out would export those parts
// to every caller, whose tasks must stay opaque.
//
// docs/tasks.md describes the format, the Dockerfile subset and the
// compatibility of every task.toml field.
package tasks
