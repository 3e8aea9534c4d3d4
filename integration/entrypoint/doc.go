// Package entrypoint tests harnessd as a container entrypoint, with real
// binaries: harnessd serve as PID 1 of a new PID namespace (orphans reaped,
// zombies not accumulating, a crashing harness not taking the daemon down,
// SIGTERM draining every harness tree before a clean exit, the other signals
// as documented), and harnessd check, health and serve --require outside a
// namespace.
//
// The namespace tests need unshare(1) and the privilege to create a PID
// namespace (root, or unprivileged user namespaces). Without them they skip
// with the reason, except under CI=true, where a missing prerequisite fails.
package entrypoint
