package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

// WaitReady keeps what a child prints before it is ready for the caller,
// at most Spec.MaxStartupBytes of it: 4 MiB before the ready line against a
// 1 MiB bound is a *StartError of Reason FailOutput wrapping a
// *StartupOutputError, in line mode and on a terminal alike (it kept all of
// it: lines as they came, terminal chunks whole). The control: 512 KiB
// within the bound is returned whole.
func TestWaitReadyBoundsStartupOutput(t *testing.T) {
	s := newSup(t, Options{})
	const script = `yes 0123456789abcdef0123456789abcde | head -c %d; echo; echo READY`
	ready := func(b []byte) bool { return bytes.Contains(b, []byte("READY")) }
	for _, tc := range []struct {
		name string
		pty  *PTY
	}{{"lines", nil}, {"pty", &PTY{}}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.pty != nil && !s.Mechanisms().PTY {
				testbin.Missing(t, "no pseudo-terminals on this machine")
			}
			for _, n := range []int{4 << 20, 512 << 10} {
				spec := shSpec(fmt.Sprintf(script, n) + `; exec cat >/dev/null`)
				spec.PTY, spec.MaxStartupBytes = tc.pty, 1<<20
				p := startSh(t, s, spec)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				early, err := p.WaitReady(ctx, ready)
				cancel()
				kept := len(bytes.Join(early, nil))
				var se *StartError
				var oe *StartupOutputError
				switch {
				case n > 1<<20 && (!errors.As(err, &se) || se.Reason != FailOutput || !errors.As(err, &oe) || oe.Limit != 1<<20):
					t.Errorf("%d bytes before ready, bound 1 MiB: %v, want a FailOutput StartError", n, err)
				case n > 1<<20 && kept > 0:
					t.Errorf("%d bytes before ready, bound 1 MiB: %d bytes returned with the error", n, kept)
				case n < 1<<20 && (err != nil || kept < n/2):
					t.Errorf("%d bytes before ready, bound 1 MiB: %v, %d bytes returned", n, err, kept)
				}
			}
		})
	}
}
