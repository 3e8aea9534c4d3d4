package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register("version", "print the version", func([]string) int {
		fmt.Printf("harnessd %s (%s, %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return exitOK
	})
}

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}
