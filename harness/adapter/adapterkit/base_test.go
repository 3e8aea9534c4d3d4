package adapterkit_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

// shell launches `sh -c script`.
func shell(t *testing.T, script string) *harness.Launch {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		testbin.Missing(t, "sh is not installed: the adapter base tests run shell scripts as harnesses")
	}
	return adaptertest.Launch(t, sh, "-c", script)
}

// readyLine waits for a stdout line "ready"; end of output is ErrHungUp.
func readyLine(ctx context.Context, p *process.Process) error {
	for {
		select {
		case l, ok := <-p.Lines():
			if !ok {
				return adapterkit.ErrHungUp
			}
			if string(l.Text) == "ready" {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func failure(t *testing.T, err error) *harness.Failure {
	t.Helper()
	f, ok := harness.AsFailure(err)
	if !ok {
		t.Fatalf("error %v (%T) is not a Failure", err, err)
	}
	if f.Type != wire.FailureStartupFailed {
		t.Fatalf("failure type %s, want %s: %v", f.Type, wire.FailureStartupFailed, f)
	}
	return f
}

func TestZeroBaseHasNoHarness(t *testing.T) {
	var b adapterkit.Base
	if err := b.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if b.Alive() || b.Process() != nil || b.MaxLineBytes() != 0 {
		t.Fatal("a zero Base reports a harness")
	}
	if exit, tail, pid := b.Diagnostics(); exit != nil || tail != "" || pid != 0 {
		t.Fatalf("Diagnostics %v %q %d", exit, tail, pid)
	}
}

func TestStartEnvironmentStopIsIdempotent(t *testing.T) {
	l := shell(t, `echo "$HARNESSD_EPISODE_ID $HARNESSD_WORKSPACE $EXTRA" >&2; echo ready; read x`)
	l.MaxLineBytes = 0
	var b adapterkit.Base
	p, err := b.Start(context.Background(), l, adapterkit.Spec{Env: []string{"EXTRA=added"}}, readyLine)
	if err != nil {
		t.Fatal(err)
	}
	if b.Process() != p || !b.Alive() || b.MaxLineBytes() != process.DefaultMaxLineBytes {
		t.Fatalf("after Start: alive %v, line limit %d", b.Alive(), b.MaxLineBytes())
	}
	for i := range 2 {
		if err := b.Stop(context.Background()); err != nil {
			t.Fatalf("Stop %d: %v", i+1, err)
		}
	}
	exit, tail, pid := b.Diagnostics()
	if b.Alive() || exit == nil || pid != p.Pid() {
		t.Fatalf("after Stop: alive %v, exit %v, pid %d", b.Alive(), exit, pid)
	}
	if want := "ep-1 " + l.Workspace + " added"; !strings.Contains(tail, want) {
		t.Fatalf("stderr tail %q, want %q", tail, want)
	}
}

func TestStartupTimeout(t *testing.T) {
	l := shell(t, `echo starting >&2; read x`)
	l.StartupTimeout = 100 * time.Millisecond
	var b adapterkit.Base
	_, err := b.Start(context.Background(), l, adapterkit.Spec{Tail: strings.ToUpper}, readyLine)
	f := failure(t, err)
	if !strings.Contains(f.Message, "did not become ready within 100ms") || !errors.Is(f, context.DeadlineExceeded) {
		t.Fatalf("message %q (%v)", f.Message, f.Err)
	}
	if f.Exit == nil || !strings.Contains(f.StderrTail, "STARTING") {
		t.Fatalf("exit %v, tail %q", f.Exit, f.StderrTail)
	}
	if b.Process() != nil || b.Alive() {
		t.Fatal("a failed Start left a harness")
	}
}

func TestHarnessExitsDuringStartup(t *testing.T) {
	l := shell(t, `echo "no api key" >&2; exit 4`)
	var b adapterkit.Base
	_, err := b.Start(context.Background(), l, adapterkit.Spec{}, readyLine)
	f := failure(t, err)
	if f.Exit == nil || f.Exit.Code != 4 || !strings.Contains(f.StderrTail, "no api key") ||
		!strings.Contains(f.Message, "exited with code 4 during start-up") {
		t.Fatalf("%+v", f)
	}
}

func TestReadyFailureDescribedByAdapter(t *testing.T) {
	l := shell(t, `echo ready; read x`)
	var b adapterkit.Base
	_, err := b.Start(context.Background(), l, adapterkit.Spec{}, func(ctx context.Context, p *process.Process) error {
		return harness.Fail(wire.FailureStartupFailed, "handshake refused")
	})
	if f := failure(t, err); f.Message != "handshake refused" || f.Exit == nil {
		t.Fatalf("%+v", f)
	}
}

func TestStartWithoutProgram(t *testing.T) {
	var b adapterkit.Base
	l := adaptertest.Launch(t)
	if f := failure(t, errOf(b.Start(context.Background(), l, adapterkit.Spec{}, nil))); !strings.Contains(f.Message, "no harness command") {
		t.Fatalf("%+v", f)
	}
	l = adaptertest.Launch(t, "/nonexistent/harness")
	if f := failure(t, errOf(b.Start(context.Background(), l, adapterkit.Spec{}, nil))); !strings.Contains(f.Message, "/nonexistent/harness") {
		t.Fatalf("%+v", f)
	}
}

func errOf(_ *process.Process, err error) error { return err }

func TestStopByEOFLetsTheHarnessExit(t *testing.T) {
	l := shell(t, `echo ready; read x; exit 0`)
	l.StopGrace = time.Minute
	var b adapterkit.Base
	if _, err := b.Start(context.Background(), l, adapterkit.Spec{StopByEOF: true}, readyLine); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exit, _, _ := b.Diagnostics(); exit == nil || exit.Code != 0 || exit.Signaled() {
		t.Fatalf("exit %v: the harness should have exited by itself at end of input", exit)
	}
}

func TestCheckOutput(t *testing.T) {
	l := shell(t, `echo ready; read x`)
	l.MaxLineBytes = 64
	var b adapterkit.Base
	p, err := b.Start(context.Background(), l, adapterkit.Spec{}, readyLine)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop(context.Background())
	in := harness.TurnInput{OutputLimit: 1}
	if err := b.CheckOutput(process.Line{Text: []byte("x")}, harness.TurnInput{}, p.OutputBytes(), nil); err != nil {
		t.Fatalf("a short line: %v", err)
	}
	for _, c := range []struct {
		line  process.Line
		start int64
		want  string
	}{
		{process.Line{TooLong: true, Size: 100}, p.OutputBytes(), "100-byte line (limit 64)"},
		{process.Line{Text: []byte("x")}, 0, "more than 1 bytes in one turn (episode.output_limit)"},
	} {
		err := b.CheckOutput(c.line, in, c.start, nil)
		if f, ok := harness.AsFailure(err); !ok || f.Type != wire.FailureOutputLimit || !strings.Contains(f.Message, c.want) {
			t.Errorf("CheckOutput: %v, want %q", err, c.want)
		}
	}
}
