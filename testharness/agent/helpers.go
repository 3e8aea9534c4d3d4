package agent

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// RunSleep implements "testharness sleep [--ignore-term] DURATION": a
// process that just waits, used as a grandchild in kill tests.
func RunSleep(args []string) int {
	d := time.Hour
	for _, a := range args {
		switch a {
		case "--ignore-term":
			signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		default:
			if v, err := parseDuration(a); err == nil {
				d = v
			}
		}
	}
	time.Sleep(d)
	return 0
}

// RunDetach implements "testharness detach": start a setsid sleeper, print
// its pid and exit, so the sleeper is orphaned and out of the process group.
func RunDetach() int {
	cmd := exec.Command(selfPath(), "sleep", "1h")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "detach:", err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	return 0
}
