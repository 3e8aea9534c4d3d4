package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/internal/version"
)

// A build stamped with -X github.com/harnessd/harnessd/internal/version.version=TAG reports the tag (how a release
// is built: docs/deploy.md).
func TestReleaseBuildReportsItsTag(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "harnessd")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/harnessd/harnessd/internal/version.version=v9.8.7 -X github.com/harnessd/harnessd/internal/version.revision=feedface", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v version.Info
	if err := json.Unmarshal(out, &v); err != nil || v.Version != "v9.8.7" {
		t.Errorf("version --json: %s (%v)", out, err)
	}
}
