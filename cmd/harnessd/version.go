package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register("version", "print the version, VCS revision and Go version", runVersion)
}

// versionInfo is what harnessd version reports (its --json output).
type versionInfo struct {
	// Version is the release (-ldflags -X main.version=...), else the
	// module version of the build, else "dev".
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from (vcs.revision),
	// empty when the build was not stamped (go build -buildvcs=false, or
	// outside a repository).
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

// readVersion gathers the version from the build info.
func readVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(version, bi)
}

// versionFrom gathers the version from a release string ("dev" when none
// was stamped) and the build info (nil when unavailable).
func versionFrom(release string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: release, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	v.Module = bi.Main.Path
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
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
	return v
}

// String is the one-line form: "dev+a1b2c3d4e5f6-dirty" for a build from
// a work tree, the release as it is otherwise.
func (v versionInfo) String() string {
	s := v.Version
	if v.Revision != "" && !strings.Contains(s, shortRevision(v.Revision)) {
		s += "+" + shortRevision(v.Revision)
	}
	if v.Modified && !strings.Contains(s, "dirty") { // Go's own pseudo-versions say +dirty
		s += "-dirty"
	}
	return s
}

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
