// Package evaljob runs evaluation jobs, as `harbor run` does: every task
// of one or more tasksets × one or more agents (or the oracle, the task's
// own solution) × k attempts, N trials at once in one daemon process, each
// trial its own episode in its own sandbox (package session) or, for the
// oracle, its own solve-then-grade (package tasks), with retries of
// infrastructure failures, resume after a crash, and the pass@k summary.
//
// It owns the job directory and everything in it (layout.go says what):
// job.json, one directory per trial with its record, training export, ATIF
// trajectory, grade and result.json, results.jsonl and summary.json; the
// order trials run in; which failures are retried (retry.go); the summary
// (mean reward, the unbiased pass@k estimator, error types, durations,
// tokens) and its terminal rendering (table.go, terminal.go); the job's own
// flags of `harnessd eval`, the agents they name, and the exit status
// (cli.go); the oracle's run of a task (oracle.go), which `harnessd run
// --task --oracle` shares.
//
// It must not touch how a task is loaded, prepared or graded (package
// tasks), how an episode runs (packages session and episode), how records
// become trajectories (internal/atif), or the environment's command line
// (cmd/harnessd builds each agent's configuration from its flags, starts
// the process supervisor, and hands both over).
package evaljob
