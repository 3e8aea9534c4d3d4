package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"testing"
)

// semverRE is semver 2.0.0's grammar, with Go's leading "v".
var semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// Every build reports a semantic version: a release as tagged, and
// otherwise a pre-release of the next patch (it was v0.0.0-2026…-hash,
// Go's pseudo-version, or "dev").
func TestSemanticVersion(t *testing.T) {
	for _, c := range []struct {
		release, module, rev string
		modified             bool
		want                 string
	}{
		{"v1.2.3", "", "", false, "v1.2.3"},
		{"v1.2.3-4-gabc1234", "", "", false, "v1.2.4-dev.4+abc1234"},
		{"v1.2.3-4-gabc1234-dirty", "", "", false, "v1.2.4-dev.4+abc1234.dirty"},
		{"dev", "v1.2.3", "", false, "v1.2.3"},
		{"dev", "v1.2.4-0.20261201203335-684f8b9c0679", "", false, "v1.2.4-dev+684f8b9c0679"},
		{"dev", "v0.0.0-20261201203335-684f8b9c0679+dirty", "", true, "v0.0.0-dev+684f8b9c0679.dirty"},
		{"dev", "(devel)", "3e0328d1a2b3c4d5", false, "v0.0.0-dev+3e0328d1a2b3"},
		{"dev", "(devel)", "", true, "v0.0.0-dev+dirty"},
		{"dev", "", "", false, "v0.0.0-dev"},
	} {
		got := semanticVersion(c.release, c.module, c.rev, c.modified)
		if got != c.want || !semverRE.MatchString(got) {
			t.Errorf("semanticVersion(%q, %q, %q, %v) = %q, want %q (semver)", c.release, c.module, c.rev, c.modified, got, c.want)
		}
	}
	bi := &debug.BuildInfo{Main: debug.Module{Path: "m", Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	if v := versionFrom("dev", "", bi); v.String() != "v0.0.0-dev+0123456789ab.dirty" || v.Revision != "0123456789abcdef" {
		t.Errorf("versionFrom: %+v", v)
	}
}

// A build stamped with -X main.version=TAG reports the tag (how a release
// is built: docs/deploy.md).
func TestReleaseBuildReportsItsTag(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "harnessd")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7 -X main.revision=feedface", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil || v.Version != "v9.8.7" {
		t.Errorf("version --json: %s (%v)", out, err)
	}
}
