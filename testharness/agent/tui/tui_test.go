package tui_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// readUntil reads r until the output so far contains want.
func readUntil(t *testing.T, r io.Reader, acc *bytes.Buffer, want string) {
	t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(acc.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, acc.String())
		}
		n, err := r.Read(buf)
		acc.Write(buf[:n])
		if err != nil {
			t.Fatalf("read: %v (have %q)", err, acc.String())
		}
	}
}

func TestTUIOverPipes(t *testing.T) {
	cmd := exec.Command(testbin.Path(t, "testharness"), "agent", "--protocol", "tui")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var acc bytes.Buffer
	readUntil(t, out, &acc, "\x1b[1;32mtestharness>\x1b[0m ")
	if !strings.Contains(acc.String(), "\x1b[?2004h") {
		t.Fatal("bracketed paste not enabled")
	}
	acc.Reset()
	io.WriteString(in, "reply hi\r")
	readUntil(t, out, &acc, "testharness>")
	if !strings.Contains(acc.String(), "\x1b[36mhi\x1b[0m\r\n") {
		t.Fatalf("coloured reply missing: %q", acc.String())
	}
	acc.Reset()
	// A bracketed paste is one message; backspace edits it.
	io.WriteString(in, "\x1b[200~reply a\r\nreply b\x1b[201~x\x7f\r")
	readUntil(t, out, &acc, "testharness>")
	acc.Reset()
	io.WriteString(in, "history\r")
	readUntil(t, out, &acc, "testharness>")
	if !strings.Contains(acc.String(), "history: reply hi | reply a\r\nreply b | history") {
		t.Fatalf("history %q", acc.String())
	}
	acc.Reset()
	io.WriteString(in, "sleep 30s\r")
	readUntil(t, out, &acc, "thinking")
	io.WriteString(in, "\x03")
	readUntil(t, out, &acc, "^C")
	readUntil(t, out, &acc, "testharness>")
	io.WriteString(in, "\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
