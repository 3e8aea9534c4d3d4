// Package integration holds the end-to-end tests and benchmarks of
// harnessd: each starts the real `harnessd serve` binary (HARNESSD_BIN_DIR
// or a build of its own) with the test agent, real MCP servers, real
// sockets on 127.0.0.1 and, where a test needs them, network namespaces it
// made itself, and drives it as trainers and operators do (WebSocket,
// HTTP, signals). `make bench` runs its benchmarks, every figure a ratio to
// a floor measured in the same run (docs/benchmarks.md).
//
// It has no code outside its tests, and nothing imports it: the daemon's
// behaviour is checked here through the binary, not by calling into it.
package integration
