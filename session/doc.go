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
package session
