package kit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
)

// TestExitedBeforeTurn runs a harness that holds its stdin without reading
// it and exits when told (through a FIFO): a message written before it
// exits stays unread in the pipe, which is what tells an exit before the
// turn from a crash after the harness took its message.
func TestExitedBeforeTurn(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		testbin.Missing(t, "sh is not on PATH")
	}
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Close(context.Background(), 0) })
	fifo := filepath.Join(t.TempDir(), "exit")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := sup.Start(process.Spec{Name: "harness", Path: "sh", Args: []string{"-c", `read -r code < "$0"; exit "$code"`, fifo},
		Env: process.DefaultEnviron(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background(), 0) })
	msg := []byte(`{"type":"message","turn":2,"content":"hello?"}`)
	if err := p.WriteLine(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if n, ok := Unread(p); !ok || n != len(msg)+1 {
		t.Fatalf("unread before exit: %d, %v; want %d", n, ok, len(msg)+1)
	}
	if err := os.WriteFile(fifo, []byte("3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait(context.Background())
	if err != nil || st.Code != 3 {
		t.Fatalf("exit: %v %v", st, err)
	}
	if !ExitedBeforeTurn(p, st, Delivery{Written: true}) {
		t.Fatal("a message left unread in the pipe was taken for a taken turn")
	}
	if ExitedBeforeTurn(p, st, Delivery{Written: true, After: len(msg) + 1}) {
		t.Fatal("bytes written behind the message were taken for the message")
	}
	if ExitedBeforeTurn(p, st, Delivery{Written: true, Answered: true}) {
		t.Fatal("a harness that answered did not take its message")
	}
	if !ExitedBeforeTurn(p, st, Delivery{}) {
		t.Fatal("a message that could not be written was taken")
	}
	f := ExitedBetweenTurns(p, st)
	if f.Exit == nil || f.Exit.Code != 3 || f.Message != "harness exited with code 3 between turns" {
		t.Fatalf("%+v", f)
	}
}

// TestCleanSilentExitIsBeforeTurn: a harness that read ahead but exited 0
// without a line of the turn never took it up; with a non-zero code, or
// after answering, the same exit is a crash mid-turn.
func TestCleanSilentExitIsBeforeTurn(t *testing.T) {
	zero, three := process.ExitStatus{Code: 0}, process.ExitStatus{Code: 3}
	p := &process.Process{} // no stdin: Unread cannot tell
	if !ExitedBeforeTurn(p, zero, Delivery{Written: true}) {
		t.Error("clean silent exit")
	}
	if ExitedBeforeTurn(p, three, Delivery{Written: true}) {
		t.Error("exit 3 without output")
	}
	if ExitedBeforeTurn(p, zero, Delivery{Written: true, Answered: true}) {
		t.Error("clean exit after answering")
	}
}
