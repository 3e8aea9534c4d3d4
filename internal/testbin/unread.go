package testbin

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Writer is a child process whose stdout the daemon reads: its leader's
// pid and the bytes of its output read so far (a *process.Process).
type Writer interface {
	Pid() int
	OutputBytes() int64
}

// HeapWhileUnread waits until the child p has written all it meant to
// write while nothing reads its output (it made the file mark) or is
// stuck writing to its stdout (its leader sleeps in a pipe write and the
// daemon's count of its output stays put across five looks 20 ms apart),
// and returns how far the live heap grew past base meanwhile. It fails t
// when neither happens within 20 s.
func HeapWhileUnread(t *testing.T, p Writer, mark string, base uint64) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	last, still := int64(-1), 0
	for still < 5 {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the harness neither wrote all its output nor blocked writing it within 20 s (%d bytes read)", p.OutputBytes())
		}
		n := p.OutputBytes()
		if writingToAFullPipe(p.Pid()) && n == last {
			still++
		} else {
			still = 0
		}
		last = n
		time.Sleep(20 * time.Millisecond)
	}
	return int64(LiveHeap()) - int64(base)
}

// writingToAFullPipe reports whether pid sleeps in a pipe write (its
// kernel wait channel; anon_pipe_write on recent kernels, pipe_write
// before).
func writingToAFullPipe(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
	return err == nil && strings.HasSuffix(string(b), "pipe_write")
}
