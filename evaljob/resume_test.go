package evaljob_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// killAfter starts bin/harnessd eval with args and SIGKILLs it once its
// log says n trials have finished (each line is printed after the trial's
// result is in results.jsonl and synced).
func killAfter(t *testing.T, n, total int, args ...string) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "harnessd"), append([]string{"eval"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("[%d/%d]", n, total)
	sc := bufio.NewScanner(stderr)
	var log []string
	killed := false
	for sc.Scan() {
		log = append(log, sc.Text())
		if !killed && strings.HasSuffix(sc.Text(), mark) {
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("the job ended (%v) before %d trials finished:\n%s", err, n, strings.Join(log, "\n"))
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the job was not killed: %v", cmd.ProcessState)
	}
}

func TestKilledJobResumesOnlyItsUnfinishedTrials(t *testing.T) {
	harbor, wrong := taskFixture(t)
	args := []string{"--tasks", harbor, "--tasks", wrong, "--oracle", "-n", "2", "--attempts", "4"} // 12 trials
	dir := filepath.Join(t.TempDir(), "job")
	killAfter(t, 5, 12, append(args, "--job-dir", dir)...)

	// Finished: a result.json (a kill between it and its results.jsonl
	// line leaves one more than the lines).
	before := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(dir, "trials", "*", "result.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		before[filepath.Base(filepath.Dir(f))] = b
	}
	for _, r := range readResults(t, dir) {
		if before[r.Trial] == nil {
			t.Fatalf("trial %s is in results.jsonl without its result.json", r.Trial)
		}
	}
	if len(before) < 5 || len(before) >= 12 {
		t.Fatalf("%d trials finished before the kill, want 5 to 11", len(before))
	}
	// A line torn by the kill (a write cut short) is dropped on resume.
	f, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"trial":"oracle__hello__4","agent":"or`)
	f.Close()

	// A changed configuration is refused, naming what changed.
	changed := append([]string{"--resume", dir}, args...)
	changed[len(changed)-1] = "3" // --attempts 3
	code, _, stderr := eval(t, changed...)
	if code != 2 || !strings.Contains(stderr, "attempts") {
		t.Fatalf("resume with --attempts 3: exit %d, want 2 naming attempts:\n%s", code, stderr)
	}

	// --resume alone takes the job's own flags.
	code, stdout, stderr := eval(t, "--resume", dir)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if want := fmt.Sprintf("ran %d trials (%d finished before)", 12-len(before), len(before)); !strings.Contains(stderr, want) {
		t.Errorf("resume's log lacks %q:\n%s", want, stderr)
	}
	res := readResults(t, dir)
	seen := map[string]bool{}
	for _, r := range res {
		if seen[r.Trial] {
			t.Errorf("trial %s twice in results.jsonl", r.Trial)
		}
		seen[r.Trial] = true
	}
	if len(seen) != 12 {
		t.Fatalf("results.jsonl holds %d trials after resume, want 12", len(seen))
	}
	for trial, b := range before {
		now, err := os.ReadFile(filepath.Join(dir, "trials", trial, "result.json"))
		if err != nil || string(now) != string(b) {
			t.Errorf("trial %s finished before the kill and was run again", trial)
		}
	}

	// One job directory is run by one process at a time.
	lock, err := os.Open(filepath.Join(dir, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := eval(t, "--resume", dir); code != 2 || !strings.Contains(stderr, "in use") {
		t.Errorf("resume of a job whose lock is held: exit %d, want 2 saying it is in use:\n%s", code, stderr)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	// The resumed job's summary is an uninterrupted job's, timings aside.
	whole := filepath.Join(t.TempDir(), "whole")
	if code, stdout, stderr := eval(t, append(args, "--job-dir", whole)...); code != 0 {
		t.Fatalf("uninterrupted job: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if a, b := timeless(readSummary(t, dir)), timeless(readSummary(t, whole)); !reflect.DeepEqual(a, b) {
		t.Errorf("resumed summary %+v\nuninterrupted %+v", a, b)
	}
}

func TestInfrastructureFailuresAreRetriedAndTheExitStatusSaysSo(t *testing.T) {
	harbor, _ := taskFixture(t)
	hello := filepath.Join(harbor, "hello")
	broken := noopHarness(t) + " --crash-on-start 3" // exits before it is ready: startup_failed
	dir := filepath.Join(t.TempDir(), "job")
	code, stdout, stderr := eval(t, "--tasks", hello, "--agent", broken, "--max-retries", "2", "--job-dir", dir)
	if code != 1 {
		t.Fatalf("a trial that could not run: exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	res := readResults(t, dir)
	if len(res) != 1 || res[0].ErrorType != "startup_failed" || res[0].Retries != 2 ||
		!reflect.DeepEqual(res[0].PreviousErrors, []string{"startup_failed", "startup_failed"}) || res[0].Reward != nil {
		t.Fatalf("results: %+v", res)
	}
	if s := readSummary(t, dir); s.Unrewarded != 1 || row(t, s, "testharness", "hello").ErrorTypes["startup_failed"] != 1 {
		t.Errorf("summary: %+v", s)
	}

	dir = filepath.Join(t.TempDir(), "job")
	eval(t, "--tasks", hello, "--agent", broken, "--retry-exclude", "startup_failed", "--job-dir", dir)
	if res := readResults(t, dir); len(res) != 1 || res[0].Retries != 0 {
		t.Errorf("--retry-exclude startup_failed: %+v", res)
	}

	// A graded failure is never retried: the harness crashes mid-turn, the
	// tests grade what it left (0), whatever --retry-include says.
	dir = filepath.Join(t.TempDir(), "job")
	crash := filepath.Join(t.TempDir(), "crash.jsonl")
	os.WriteFile(crash, []byte(`{"id": "crash", "instruction": "crash 7", "grader": "false"}`+"\n"), 0o644)
	code, _, stderr = eval(t, "--tasks", crash, "--agent", noopHarness(t), "--retry-include", "harness_crashed", "--job-dir", dir)
	res = readResults(t, dir)
	if code != 0 || len(res) != 1 || res[0].ErrorType != "harness_crashed" || res[0].Retries != 0 || res[0].Reward == nil || *res[0].Reward != 0 {
		t.Errorf("a crash mid-turn: exit %d, results %+v\n%s", code, res, stderr)
	}
}
