// Package session owns one environment session of the daemon: its
// episodes in turn (Reset opens one through package episode, Step runs
// its turns, Close ends it), the turn loop around the harness adapter
// (turn bounds and limits, the environment's event queue, the simulated
// user), the trajectory window and the record file, rewards and the
// observations a trainer receives, and the lifecycle events an Observer
// sees. It must not touch what an episode opens (directories, sandbox,
// doors, tool servers, gateway): that is package episode's, reached only
// through an Episode.
//
// Two parts of the turn loop are packages of their own, which session
// drives: the episode's event log, its per-turn bounds, trajectory window
// and record file (session/eventlog), and the simulated user's protocol
// and clients (session/simuser).
//
// Forks (fork.go, forksource.go, forkopen.go, rewind.go): Fork takes the
// parent's state between turns — the harness's (harness.Forker), a
// snapshot of its directories or a checkpoint, the gateway's History, the
// turns' messages and the bridge's record — and opens each sibling as a
// session of its own from it (resume, line, or a replay the session drives
// while the doors answer from the records); Reset with AtTurn rewinds the
// session's own episode the same way.
//
// The package is bigger than 3,000 lines: reset, step, the event queue,
// the simulated user and forks all read and write one run's state (the
// current episode, its turn count, its checkpoints and records) under the
// session's one operation lock; a split would export that state and its
// locking to several packages. The parts that stand alone are packages of
// their own (above).
package session
