package version

import (
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
		got := Semantic(c.release, c.module, c.rev, c.modified)
		if got != c.want || !semverRE.MatchString(got) {
			t.Errorf("Semantic(%q, %q, %q, %v) = %q, want %q (semver)", c.release, c.module, c.rev, c.modified, got, c.want)
		}
	}
	bi := &debug.BuildInfo{Main: debug.Module{Path: "m", Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	if v := From("dev", "", bi); v.String() != "v0.0.0-dev+0123456789ab.dirty" || v.Revision != "0123456789abcdef" {
		t.Errorf("versionFrom: %+v", v)
	}
}
