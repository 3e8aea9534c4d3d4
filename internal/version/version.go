// Package version owns harnessd's version: a semantic version from the
// release tag stamped at build time (-ldflags "-X
// github.com/harnessd/harnessd/internal/version.version=TAG", as make build
// and the Dockerfile do) or the module's build information, with the VCS
// revision and state. It must not print anything: the commands do.
package version

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
)

// version is the release (git describe --tags --dirty) stamped at build
// time; "dev" when nothing was.
var version = "dev"

// Info is what harnessd version reports (its --json output).
type Info struct {
	// Version is a semantic version: the release tag (vX.Y.Z) for a build
	// of a tagged commit, else a pre-release of the next patch naming the
	// commits since the tag and the revision (v1.2.4-dev.3+abc123def456),
	// v0.0.0-dev… before any tag (semanticVersion).
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from (vcs.revision,
	// else -X github.com/harnessd/harnessd/internal/version.revision), empty when the build was not stamped.
	Revision string `json:"revision,omitempty"`
	// Time is the commit's time (vcs.time, RFC 3339).
	Time string `json:"time,omitempty"`
	// Modified reports uncommitted changes in the tree (vcs.modified).
	Modified bool `json:"modified"`
	// Module is the main module's path.
	Module    string `json:"module,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// revision is set at build time with -ldflags "-X github.com/harnessd/harnessd/internal/version.revision=COMMIT"
// (make build does), for builds the Go toolchain does not stamp (a git
// worktree, -buildvcs=false).
var revision = ""

// modified is set with -ldflags "-X github.com/harnessd/harnessd/internal/version.modified=true" (make build does
// when the tree has uncommitted changes), beside revision.
var modified = ""

// Read gathers the version from what -ldflags stamped and the build info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	v := From(version, revision, bi)
	if modified == "true" && !v.Modified {
		v.Modified = true
		v.Version = Semantic(version, "", v.Revision, true)
	}
	return v
}

// From gathers the version from what -ldflags stamped (release
// "dev" and rev "" when nothing was) and the build info (nil when
// unavailable).
func From(release, rev string, bi *debug.BuildInfo) Info {
	v := Info{Revision: rev, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	module := ""
	if bi != nil {
		v.Module = bi.Main.Path
		module = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	v.Version = Semantic(release, module, v.Revision, v.Modified)
	return v
}

var (
	// gitDescribe is `git describe --tags --dirty` after a tag: the tag,
	// the commits since, the abbreviated commit.
	gitDescribe = regexp.MustCompile(`^(v\d+)\.(\d+)\.(\d+)-(\d+)-g([0-9a-f]+)(-dirty)?$`)
	// pseudoVersion is Go's version of an untagged commit (vX.Y.(Z+1)-0.
	// or v0.0.0-, a date and the commit), "+dirty" for a modified tree.
	pseudoVersion = regexp.MustCompile(`^(v\d+\.\d+\.\d+)-(?:0\.)?\d{14}-([0-9a-f]{12})(\+dirty)?$`)
)

// Semantic is the version harnessd reports, in semver's form: the
// release stamped with -ldflags or the module version of a tagged build as
// it is (v1.2.3), and otherwise a pre-release of the next patch: from `git
// describe` output (v1.2.3-4-gabc → v1.2.4-dev.4+abc), from Go's
// pseudo-version (v1.2.4-0.20260101-abc → v1.2.4-dev+abc), or, with no
// tag at all, v0.0.0-dev (+ the revision). ".dirty" marks a modified tree.
func Semantic(release, module, rev string, modified bool) string {
	if m := gitDescribe.FindStringSubmatch(release); m != nil {
		patch, _ := strconv.Atoi(m[3])
		return fmt.Sprintf("%s.%s.%d-dev.%s+%s%s", m[1], m[2], patch+1, m[4], m[5], dirtyMark(m[6] != "", "."))
	}
	if release != "" && release != "dev" {
		return release
	}
	if m := pseudoVersion.FindStringSubmatch(module); m != nil {
		return m[1] + "-dev+" + m[2] + dirtyMark(m[3] != "", ".")
	}
	if module != "" && module != "(devel)" {
		return module
	}
	s := "v0.0.0-dev"
	if rev != "" {
		return s + "+" + shortRevision(rev) + dirtyMark(modified, ".")
	}
	return s + dirtyMark(modified, "+")
}

// dirtyMark is sep+"dirty" when dirty.
func dirtyMark(dirty bool, sep string) string {
	if dirty {
		return sep + "dirty"
	}
	return ""
}

// String is the one-line form: the semantic version.
func (v Info) String() string { return v.Version }

func shortRevision(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}
