package bridge

import (
	"errors"
	"os"
	"time"

	"github.com/harnessd/harnessd/process"
)

// stdinWriter writes JSON-RPC frames to the upstream's stdin with a write
// deadline, so that an upstream that stops reading cannot block the bridge
// for longer than a call may take. A write that times out may have left a
// partial frame, so the upstream is killed (onTimeout).
type stdinWriter struct {
	f         *os.File
	p         *process.Process
	timeout   time.Duration
	onTimeout func()
}

// Write writes one frame under the write deadline.
func (w *stdinWriter) Write(b []byte) (int, error) {
	if w.timeout > 0 {
		w.f.SetWriteDeadline(time.Now().Add(w.timeout))
	}
	n, err := w.f.Write(b)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		w.onTimeout()
	}
	return n, err
}

// Close closes the upstream's stdin (end of input).
func (w *stdinWriter) Close() error { return w.p.CloseStdin() }
