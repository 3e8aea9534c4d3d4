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
// The package is bigger than 3,000 lines: the turn loop's parts (event
// queue, simulated user, limits, record) all read and write one run's
// state under the session's lock, and were kept together when the event
// queue and the simulated user landed at once; the simulated user's
// protocol (user.go) is the first candidate to move out.
package session
