package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/harnessd/harnessd/process"
)

// startupTimeoutMessage is what a user reads when the harness did not
// become ready in time, whichever adapter drove it: the timeout and the
// knob that sets it, the usual cause, and the stderr tail.
func startupTimeoutMessage(timeout time.Duration, stderrTail string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "harness did not become ready within %s (harness.startup_timeout, --startup-timeout). "+
		"The usual cause is output that is not flushed: Python's print to a pipe is buffered, so use "+
		"print(..., flush=True) or run python3 -u; a slow start needs a longer harness.startup_timeout", timeout)
	if tail := strings.TrimSpace(stderrTail); tail != "" {
		b.WriteString("; stderr tail:\n" + tail)
	} else {
		b.WriteString("; the harness wrote nothing to stderr")
	}
	return b.String()
}

// exitAttr is the log attribute of an exit status: none while the process
// has not exited (no "exit=<nil>" in logs).
func exitAttr(st *process.ExitStatus) []any {
	if st == nil {
		return nil
	}
	return []any{"exit", st.String()}
}
