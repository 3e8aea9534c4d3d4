package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/process/sandbox"
)

// After its first run a sandbox holds nothing but its init (a stage forked
// ahead then would be a start of the init binary wasted by every episode's
// end); once it has run twice (a one-shot CLI's run per turn) it keeps the
// next run's exec stage ready, which is also this test's positive control:
// the check sees a waiting stage when there is one.
func TestAStageIsForkedAheadOnlyForASandboxThatRunsAgain(t *testing.T) {
	need(t)
	cfg := baseConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	run := func() {
		t.Helper()
		if _, err := sb.Run(ctx, sandbox.Command{Path: agentPath, Args: []string{agentCommand, "exit", "0"}}); err != nil {
			t.Fatal(err)
		}
		if e, err := sb.Wait(ctx); err != nil || e.Status.Code != 0 {
			t.Fatalf("run: %+v %v", e, err)
		}
	}
	run()
	// The init forks a stage, if it does, right after reporting the exit;
	// a forked stage waits for its command until the sandbox closes.
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if pids := sb.HostPids(); len(pids) > 1 {
			t.Fatalf("after one run the sandbox holds %d processes %v: an exec stage was forked ahead", len(pids), pids)
		}
	}
	run()
	for len(sb.HostPids()) < 2 {
		if ctx.Err() != nil {
			t.Fatalf("after a second run no exec stage was forked ahead: %v", sb.HostPids())
		}
		time.Sleep(10 * time.Millisecond)
	}
	run() // the stage forked ahead takes the third run
}
