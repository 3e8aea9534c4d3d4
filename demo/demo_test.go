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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, filepath.Dir(harnessd), path); err != nil {
		for _, d := range running {
			d.kill()
		}
		t.Fatal(err)
	}
}
