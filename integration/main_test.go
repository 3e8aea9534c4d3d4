// Package integration drives the real harnessd binary end to end: every test
// builds (or reuses, with HARNESSD_BIN_DIR) the harnessd and testharness
// binaries, starts `harnessd serve` as a subprocess on 127.0.0.1:0 with
// --addr-file, and talks to it over real sockets with the client package and
// raw coder/websocket frames. Nothing of harnessd is mocked.
//
// No process is left behind: every daemon is started with a unique marker in
// its environment (LC_HARNESSD_TEST, which the default allowlist passes on
// to harnesses, tool servers and rubric commands, and which escapees
// inherit); when a test ends, the daemon is stopped with SIGTERM and the
// test fails if any process carrying its marker is still alive. Tests that
// learn pids (the harness pid from state, pids printed by the escape,
// orphan and spawn directives, the tool server's pid from its stats tool)
// also check those pids by identity (pid + start time) in /proc.
//
// Nothing here asserts on elapsed time: waits are bounded polls of an
// observable condition, and where a test must let time pass (the idle
// reaper) it also proves that the mechanism under test does act.
//
// Acceptance checklist of ../shared/reference/openenv-protocol.md §16, server
// and route items, covered end to end:
//
//	 96 production: /harness is served                     TestProductionModeGating, TestHarnessStreamingTurns
//	 97 simulation: no /harness                             TestProductionModeGating
//	 98 production + non-harness environment                n/a: every harnessd environment is a harness environment
//	 99 production: /reset /step /state 404/405, /health 200 TestProductionModeGating
//	100 production start-up starts no harness               TestNoProcessBeforeFirstSession
//	101 session_started, then tool_call … turn_complete     TestHarnessStreamingTurns
//	102 two turns, one harness process, order kept          TestHarnessStreamingTurns
//	103-107 bad /harness frames → protocol_error, no turn   TestHarnessBadFrames
//	108 harness fails mid-turn → one terminal error, sanitized, closed, sessions 0   TestHarnessCrashMidTurn
//	109 connect, disconnect → harness stopped, sessions 0    TestHarnessDisconnect
//	110 idle reaper spares a long silent /harness turn      TestIdleReaper
//	111 openenv/session/close on a /harness session          TestHarnessHTTPClose
//	112 /harness over capacity → CAPACITY_REACHED            TestHarnessCapacity
//	113 --mode production                                   TestProductionModeGating
//	114 OPENENV_MODE=production                             TestProductionModeGating
//	115 default: simulation                                 TestProductionModeGating
//	116 OPENENV_MODE=production, --mode simulation wins      TestProductionModeGating
//	117-118 harness dead after 0 / 1 turns                  TestHarnessDeadBetweenTurns
//	119 hanging harness → "exceeded 0.2 seconds"            TestHarnessTurnTimeout
//	120 stream without turn_complete                        TestHarnessNoTurnComplete
//	121 simulation episode: tools, rubric reward, done      TestWSEpisode
//	122 production over HTTP: /health, /reset gone, turns   TestHarnessStreamingTurns
//	123 harness leaks a secret and exits at start → SESSION_ERROR without it   TestHarnessStartupSecret
//
// Environment items observable from outside (§16 59–95) also covered here:
// 59/61 (reset: episode id, injected tools, step_count 0), 60/92 (reset
// replaces the harness), 62 (no tools: nothing injected), 64 (two turns),
// 65 (top-level metadata.turn_events), 66 (rubric reward), 67 (step before
// reset → EXECUTION_ERROR), 68 (harness dead → terminal observation), 70
// (turn timeout), 72 (tools listed without reset), 74 (close is final).
//
// Beyond the checklist: /ws capacity (TestWSCapacity), bad frames
// (TestWSBadFrames), oversize frames (TestWSOversizeFrame), disconnect
// mid-turn (TestWSDisconnectMidTurn), reconnecting right after close with one
// slot (TestWSReconnectAfterClose), SIGTERM/SIGINT drain with a turn running
// and escapees (TestSIGTERMDrain, TestDrainClosesGoClients), API token
// (TestAPIToken), stateful HTTP (TestHTTPStateful), /metadata /schema
// /health (TestMetadataSchemaHealth), /mcp JSON-RPC and /ws?session_id=
// attachment (TestMCPJSONRPC, TestWSMCPFrames), cancel (TestHarnessCancel),
// `harnessd run` (TestRunCommand), the refusal of orchestration connections
// from harness processes (TestHarnessCannotReachOrchestration), OpenEnv's
// Python client frames (TestPythonOpenEnvClient, with the token as URL
// credentials too) and the README's example as printed
// (TestReadmePythonExample). Operations: /metrics during real episodes
// (TestMetricsDuringEpisode), OpenEnv's validator checks in both modes
// (TestOpenEnvValidator), drain policies with probes during the drain
// (TestDrainFinishesRunningTurn, TestDrainCancelsRunningTurn), readiness
// that follows the environment's programs (TestReadinessFollowsPrograms),
// POST /close and the idle timeout (TestHTTPClose, TestHTTPIdleTimeout).
package integration

import (
	"os"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }
