package probe

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

// ChildCommand is the hidden subcommand the probes run their throwaway
// children as: the executable given to Run is re-run as
// "<self> ChildCommand MODE", and must then call RunChild.
const ChildCommand = "__probe"

// Exit codes of RunChild.
const (
	childOK      = 0
	childFailure = 1
	childUsage   = 2
)

// RunChild is the body of a probe child: args are the words after
// ChildCommand (one mode). It returns the process's exit code. Every child
// ends on its own after a minute, so even a failed kill leaves nothing
// behind for long.
func RunChild(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "harnessd: internal probe child: want one mode")
		return childUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd probe:", err)
		return childFailure
	}
	start := func(mode string, attr *syscall.SysProcAttr) (*exec.Cmd, error) {
		c := exec.Command(self, ChildCommand, mode)
		c.SysProcAttr = attr
		return c, c.Start()
	}
	fail := func(what string, err error) int {
		fmt.Fprintln(os.Stderr, "harnessd probe:", what, err)
		return childFailure
	}
	switch args[0] {
	case "true":
		return childOK
	case "sleep":
		time.Sleep(probeChildLife)
		return childOK
	case "tty":
		fmt.Printf("tty=%s\n", map[bool]string{true: "yes", false: "no"}[term.IsTerminal(0)])
		time.Sleep(probeChildLife)
		return childOK
	case "detach":
		c, err := start("sleep", &syscall.SysProcAttr{Setsid: true})
		if err != nil {
			return fail("detach:", err)
		}
		fmt.Println(c.Process.Pid)
		return childOK
	case "pdeath":
		c, err := start("sleep", &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL})
		if err != nil {
			return fail("pdeath:", err)
		}
		fmt.Printf("{\"child\":%d}\n", c.Process.Pid)
		return childOK
	case "tree":
		var r treeReport
		member, err := start("sleep", nil)
		if err != nil {
			return fail("member:", err)
		}
		r.Member = member.Process.Pid
		escapee, err := start("sleep", &syscall.SysProcAttr{Setsid: true})
		if err != nil {
			return fail("escapee:", err)
		}
		r.Escapee = escapee.Process.Pid
		out, err := exec.Command(self, ChildCommand, "detach").Output()
		if err != nil {
			return fail("detach:", err)
		}
		if r.Orphan, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
			fmt.Fprintln(os.Stderr, "harnessd probe: detach said", strconv.Quote(string(out)))
			return childFailure
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		time.Sleep(probeChildLife)
		return childOK
	}
	fmt.Fprintf(os.Stderr, "harnessd: internal probe child: unknown mode %q\n", args[0])
	return childUsage
}
