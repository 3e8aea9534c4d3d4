package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
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

// RunDetach implements "testharness detach [--scrub] [--linger D]": start a
// setsid sleeper (with an empty environment when --scrub), print its pid,
// then exit — after D when --linger is given — leaving the sleeper without a
// parent and outside the process group.
func RunDetach(args []string) int {
	scrub, linger := false, time.Duration(0)
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--scrub":
			scrub = true
		case "--linger":
			if i+1 < len(args) {
				i++
				d, err := parseDuration(args[i])
				if err != nil {
					fmt.Fprintln(os.Stderr, "detach:", err)
					return 2
				}
				linger = d
			}
		default:
			fmt.Fprintf(os.Stderr, "detach: unknown argument %q\n", args[i])
			return 2
		}
	}
	cmd := exec.Command(selfPath(), "sleep", "1h")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if scrub {
		cmd.Env = []string{}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "detach:", err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	os.Stdout.Sync()
	time.Sleep(linger)
	return 0
}

// floodLines writes n short non-JSON stdout lines ("line 000000000042",
// 18 bytes with the newline), batched so that the agent is not slowed by a
// write per line.
func floodLines(ctx context.Context, sink Sink, n int) {
	const batch = 4096
	var b strings.Builder
	for i := 0; i < n; i++ {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "line %012d", i)
		if (i+1)%batch == 0 || i == n-1 {
			if ctx.Err() != nil {
				return
			}
			sink.Raw(b.String())
			b.Reset()
		}
	}
}

// selfPath is the path of this binary, for starting its helper commands.
func selfPath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}
