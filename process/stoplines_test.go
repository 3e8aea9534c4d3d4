package process

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// lastWords is a shell that says ready, and on the first SIGTERM writes
// 200 numbered lines and exits 3.
const lastWords = `trap 'trap "" TERM; i=0; while [ $i -lt 200 ]; do echo "line $i"; i=$((i+1)); done; exit 3' TERM
echo ready
while :; do sleep 1 >/dev/null 2>&1 & wait $!; done`

// TestStopKeepsLinesWrittenBeforeExit: every line a process wrote before
// it exited reaches Lines after Stop, while Lines has room for it. Stop
// tears the readers down once the tree is dead; a line the reader takes
// from the pipe after that must still be delivered, not raced against the
// teardown (the harness's last words: an error, a final result).
func TestStopKeepsLinesWrittenBeforeExit(t *testing.T) {
	s := newSup(t, Options{})
	for round := range 10 {
		p, err := s.Start(Spec{Name: "last-words", Path: "/bin/sh", Args: []string{"-c", lastWords}, Env: DefaultEnviron(nil)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := p.WaitReady(ctx, func(b []byte) bool { return bytes.Equal(b, []byte("ready")) }); err != nil {
			t.Fatalf("round %d: wait ready: %v", round, err)
		}
		lines := p.Lines() // read from now on, not by the test until Stop returns
		if err := p.Stop(ctx, 10*time.Second); err != nil {
			t.Fatalf("round %d: stop: %v", round, err)
		}
		cancel()
		n := 0
		for l := range lines {
			if want := fmt.Sprintf("line %d", n); string(l.Text) != want {
				t.Fatalf("round %d: line %q, want %q", round, l.Text, want)
			}
			n++
		}
		if st, _ := p.ExitStatus(); st.Code != 3 {
			t.Fatalf("round %d: exit %v, want 3 (the trap ran)", round, st)
		}
		if n != 200 {
			t.Fatalf("round %d: %d of the 200 lines written before exit reached Lines", round, n)
		}
	}
}
