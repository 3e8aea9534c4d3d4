package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// TestDemo runs the whole demo (what `make demo` shows) against freshly
// built binaries; the demo checks its own outcomes and fails on any
// surprise.
func TestDemo(t *testing.T) {
	harnessd := testbin.Path(t, "harnessd")
	th := testbin.Path(t, "testharness")
	cfg, err := os.ReadFile("env.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "../bin/testharness") {
		t.Fatal("env.yaml no longer names ../bin/testharness")
	}
	path := filepath.Join(t.TempDir(), "env.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(cfg), "../bin/testharness", th)), 0o644); err != nil {
		t.Fatal(err)
	}
	example := exampleConfig(t, th)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, filepath.Dir(harnessd), path, example); err != nil {
		for _, d := range running {
			d.kill()
		}
		t.Fatal(err)
	}
}

// exampleConfig copies the worked example (its configuration and its
// customer, side by side as in the repository) into a temporary
// directory, naming the freshly built test binary: a checkout under the
// host's /tmp or HOME, which every sandbox hides, with the configuration
// file the daemon hides from every sandbox beside the customer's program.
func exampleConfig(t *testing.T, th string) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testbin.Missing(t, "the helpdesk example's customer and rubric run /usr/bin/python3: %v", err)
	}
	dir := filepath.Join("examples", "helpdesk")
	b, err := os.ReadFile(filepath.Join(dir, "env.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "../../../bin/testharness") || !strings.Contains(string(b), "./customer.py") {
		t.Fatal("examples/helpdesk/env.yaml no longer names ../../../bin/testharness and ./customer.py")
	}
	customer, err := os.ReadFile(filepath.Join(dir, "customer.py"))
	if err != nil {
		t.Fatal(err)
	}
	copyDir := filepath.Join(t.TempDir(), "helpdesk")
	if err := os.Mkdir(copyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "customer.py"), customer, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(copyDir, "env.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), "../../../bin/testharness", th)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
