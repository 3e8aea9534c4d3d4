// Command harnessd-sandbox-init is the sandbox's init, which forks each
// harness, and nothing else: a small program that links only package sandbox (and its
// Linux helpers), so that starting a sandbox does not pay for the daemon's
// package initialisation (its JSON Schema compiler, metrics, codecs). The
// Makefile embeds it in harnessd (process/sandbox/initfile, build tag
// harnessd_embedinit); it is never run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/harnessd/harnessd/process/sandbox"
)

func main() {
	sandbox.Init()
	fmt.Fprintln(os.Stderr, "harnessd-sandbox-init: started by harnessd as a sandbox's init only; nothing to do")
	os.Exit(2)
}
