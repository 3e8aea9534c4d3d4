package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
)

func init() {
	register("version", "print the version, VCS revision and Go version", runVersion)
}

// versionInfo is what harnessd version reports (its --json output).
type versionInfo struct {
	// Version is a semantic version: the release tag (vX.Y.Z) for a build
	// of a tagged commit, else a pre-release of the next patch naming the
	// commits since the tag and the revision (v1.2.4-dev.3+abc123def456),
	// v0.0.0-dev… before any tag (semanticVersion).
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from (vcs.revision,
	// else -X main.revision), empty when the build was not stamped.
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

// revision is set at build time with -ldflags "-X main.revision=COMMIT"
// (make build does), for builds the Go toolchain does not stamp (a git
// worktree, -buildvcs=false).
var revision = ""

// modified is set with -ldflags "-X main.modified=true" (make build does
// when the tree has uncommitted changes), beside revision.
var modified = ""

// readVersion gathers the version from the build info.
func readVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	v := versionFrom(version, revision, bi)
	if modified == "true" && !v.Modified {
		v.Modified = true
		v.Version = semanticVersion(version, "", v.Revision, true)
	}
	return v
}

// versionFrom gathers the version from what -ldflags stamped (release
// "dev" and rev "" when nothing was) and the build info (nil when
// unavailable).
func versionFrom(release, rev string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Revision: rev, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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
	v.Version = semanticVersion(release, module, v.Revision, v.Modified)
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

// semanticVersion is the version harnessd reports, in semver's form: the
// release stamped with -ldflags or the module version of a tagged build as
// it is (v1.2.3), and otherwise a pre-release of the next patch: from `git
// describe` output (v1.2.3-4-gabc → v1.2.4-dev.4+abc), from Go's
// pseudo-version (v1.2.4-0.20260101-abc → v1.2.4-dev+abc), or, with no
// tag at all, v0.0.0-dev (+ the revision). ".dirty" marks a modified tree.
func semanticVersion(release, module, rev string, modified bool) string {
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
func (v versionInfo) String() string { return v.Version }

func shortRevision(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

// buildVersion is the version every surface reports (/metadata, check).
func buildVersion() string { return readVersion().String() }

func runVersion(args []string) int {
	c := newCLI("version", "harnessd version [--json]\n\n"+
		"Prints the release (or module) version, the VCS revision the binary was built from, whether the\n"+
		"tree had uncommitted changes, the commit time, and the Go version and platform.")
	asJSON := c.fs.Bool("json", false, "print JSON")
	if code, done := c.parse(args); done {
		return code
	}
	if code, done := c.noArgs(); done {
		return code
	}
	v := readVersion()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return exitFailure
		}
		return exitOK
	}
	writeVersion(os.Stdout, v)
	return exitOK
}

// writeVersion prints the version for people.
func writeVersion(w io.Writer, v versionInfo) {
	fmt.Fprintf(w, "harnessd %s (%s, %s)\n", v.String(), v.GoVersion, v.Platform)
	if v.Revision != "" {
		state := "clean"
		if v.Modified {
			state = "with uncommitted changes"
		}
		fmt.Fprintf(w, "revision %s (%s), committed %s\n", v.Revision, state, orDash(v.Time))
	} else {
		fmt.Fprintln(w, "revision unknown (built without VCS stamping: -buildvcs=false or outside a git clone)")
	}
}
