// Package testbin builds harnessd's own binaries (harnessd, testharness) for
// tests that must run them as real subprocesses. Each binary is built once per
// test process into a private directory that Cleanup removes.
//
// Set HARNESSD_BIN_DIR to a directory holding prebuilt binaries to skip the
// build (the Makefile does this). It also holds the small helpers several
// packages' tests share around those subprocesses (Missing, Buffer).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Packages maps binary names to their package paths in the module.
var Packages = map[string]string{
	"harnessd":    "./cmd/harnessd",
	"testharness": "./testharness/cmd/testharness",
	"benchfloor":  "./integration/benchfloor",
}

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{}
	errs  = map[string]error{}
)

// Path returns the path of the named binary, building it if needed. It fails
// the test if the binary cannot be built.
func Path(tb testing.TB, name string) string {
	tb.Helper()
	p, err := Build(name)
	if err != nil {
		tb.Fatalf("build %s: %v", name, err)
	}
	return p
}

// Build returns the path of the named binary, building it if needed.
func Build(name string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p, nil
	}
	if err, ok := errs[name]; ok {
		return "", err
	}
	if d := os.Getenv("HARNESSD_BIN_DIR"); d != "" {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			built[name] = abs
			return abs, nil
		}
	}
	pkg, ok := Packages[name]
	if !ok {
		return "", fmt.Errorf("unknown binary %q", name)
	}
	root, err := moduleRoot()
	if err != nil {
		errs[name] = err
		return "", err
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "harnessd-testbin-")
		if err != nil {
			return "", err
		}
		// MkdirTemp makes the directory 0700; a sandboxed harness runs as
		// an unprivileged uid that must reach the binaries it is started
		// from, which are no secret.
		if err := os.Chmod(d, 0o755); err != nil {
			return "", err
		}
		dir = d
	}
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if name == "harnessd" {
		// As the Makefile builds it: with the small sandbox init embedded.
		if err := buildSandboxInit(root); err != nil {
			errs[name] = err
			return "", err
		}
		args = append(args, "-tags", "harnessd_embedinit")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		err = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		errs[name] = err
		return "", err
	}
	built[name] = out
	return out, nil
}

// Cleanup removes the binaries built by this process.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
		built = map[string]string{}
	}
}

// Main runs the tests of m and removes built binaries afterwards. Use it as
// os.Exit(testbin.Main(m)) in TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	Cleanup()
	return code
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// Missing reports a missing prerequisite of a test (a program, a kernel
// feature, an installed agent): the test is skipped with the message on a
// developer's machine, and fails under CI=true, where every prerequisite the
// project's own files install must be present.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s (CI=true: a missing prerequisite is a failure)", msg)
	}
	tb.Skip(msg)
}

// buildSandboxInit builds cmd/harnessd-sandbox-init where harnessd's
// harnessd_embedinit build embeds it from (process/sandbox/initfile, ignored by
// git), as the Makefile's build does: to a temporary name, then renamed,
// so that test processes building at once never embed a partial file (the
// build is reproducible: every one of them writes the same bytes).
func buildSandboxInit(root string) error {
	final := filepath.Join(root, "process", "sandbox", "initfile", "harnessd-sandbox-init")
	tmp := fmt.Sprintf("%s.%d", final, os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, "./cmd/harnessd-sandbox-init")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("go build ./cmd/harnessd-sandbox-init: %v\n%s", err, b)
	}
	return os.Rename(tmp, final)
}

// LeakCheck ends a test process's run of code (m.Run's): it calls stop
// (what the process keeps for its whole life, such as the sandbox
// spawner: sandbox.StopSpawners), then, when the tests passed, looks for
// goroutines left running (goleak) and fails the run if it finds any. It
// returns the exit code.
func LeakCheck(code int, stop func()) int {
	stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			return 1
		}
	}
	return code
}
