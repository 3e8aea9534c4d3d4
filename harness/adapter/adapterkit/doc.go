// Package adapterkit is the base that process-backed harness adapters build
// on. Base starts an episode's harness process from a harness.Launch with
// the one environment every adapter gives (Env: the HARNESSD_* variables),
// bounds start-up by the launch's startup timeout, maps every start-up
// error onto a startup_failed harness.Failure carrying the exit status and
// stderr tail, applies the launch's line limit and its output limit at
// start-up (process.Spec.MaxStartupBytes: a harness that writes more before
// it is ready fails, the failure naming episode.output_limit, whether
// process.WaitReady or the adapter's own handshake noticed it through
// process.Process.CheckStartupOutput), and provides the Stop,
// Alive and Diagnostics methods of harness.Adapter. An adapter embeds Base
// and keeps its protocol to itself: the readiness handshake (a ReadyFunc),
// turns and interrupts. Adapters that run one process per turn (exec) use
// Env and MaxLineBytes only.
//
// LogLimit bounds the log records a harness can cause: adapters write
// every record about the harness's output (a line they cannot use, a
// request they refuse) through one per episode, which writes the first
// LogFirst records of a kind and then counts, with summaries at powers of
// two and at the episode's end.
//
// The package must not build or map events, speak any harness protocol or
// decide what a turn's output means; it holds nothing beyond the one
// process of the current episode (and a LogLimit only its counts).
package adapterkit
