package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/harnessd/harnessd/internal/version"
)

func init() {
	register("version", "print the version, VCS revision and Go version", runVersion)
}

// buildVersion is the version every surface reports (/metadata, check).
func buildVersion() string { return version.Read().String() }

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
	v := version.Read()
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
func writeVersion(w io.Writer, v version.Info) {
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
