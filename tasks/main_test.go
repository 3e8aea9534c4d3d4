package tasks_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

func TestMain(m *testing.M) {
	// Grade and Solve re-execute this binary as the sandbox's init.
	sandbox.Init()
	os.Exit(testbin.Main(m))
}

var probeOnce = sync.OnceValue(func() sandbox.ProbeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sandbox.Probe(ctx, "")
})

// needSandbox skips (or fails under CI=true) where sandboxes cannot be made.
func needSandbox(tb testing.TB) {
	tb.Helper()
	if r := probeOnce(); !r.OK {
		testbin.Missing(tb, "sandbox: %s", r.Detail)
	}
}

// scratchDir is a directory outside /tmp (which every sandbox replaces by
// its own), removed after the test.
func scratchDir(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp("/var/tmp", "harnessd-tasks-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(d) })
	return d
}
