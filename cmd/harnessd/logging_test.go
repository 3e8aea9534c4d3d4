package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/harnessd/harnessd/internal/testbin"
)

// jsonLogger is the daemon's JSON logger at info, writing into buf; it is
// slog's default until the test ends.
func jsonLogger(t *testing.T, buf *bytes.Buffer) *slog.Logger {
	t.Helper()
	lf := logFlags{level: "info", format: "json"}
	log, err := lf.logger(buf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slog.SetDefault(slog.New(slog.DiscardHandler)) })
	return log
}

// JSON logs give every duration in seconds, as a number, under its key.
func TestJSONLogDurationsInSeconds(t *testing.T) {
	var buf bytes.Buffer
	log := jsonLogger(t, &buf)
	log.Info("drain", "drain_timeout", 20*time.Second, slog.Group("turn", "elapsed", 1500*time.Millisecond), "count", 3)
	var rec struct {
		DrainTimeout any `json:"drain_timeout"`
		Turn         struct {
			Elapsed any `json:"elapsed"`
		} `json:"turn"`
		Count any `json:"count"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if rec.DrainTimeout != 20.0 || rec.Turn.Elapsed != 1.5 || rec.Count != 3.0 {
		t.Errorf("record %s: drain_timeout %v, turn.elapsed %v, count %v", buf.Bytes(), rec.DrainTimeout, rec.Turn.Elapsed, rec.Count)
	}
}

// TestHarnessTextCannotActOnTheTerminalLog (an outside red team): on a
// terminal the daemon logs through tint in colour, and tint's colour mode
// writes a value's ESC bytes as they are. The adapters and the session
// log a harness's text (an ACP request's method, a failure's stderr
// tail): as it came, OSC 52 set the operator's clipboard, ESC[2K erased
// a line and ESC E started a forged one ("INF episode ended reward=1").
// Through a real pseudo-terminal the daemon's logger writes them as
// escapes, in a string, an error and the message alike. The control: the
// harness's text itself is in the log, escaped, and tint's own colours are
// there (it is the terminal's colour mode).
func TestHarnessTextCannotActOnTheTerminalLog(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		testbin.Missing(t, "a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	t.Setenv("NO_COLOR", "")
	lf := logFlags{level: "info", format: "auto"}
	log, err := lf.logger(tty)
	if err != nil {
		t.Fatal(err)
	}
	defer slog.SetDefault(slog.New(slog.DiscardHandler))
	forged := "fs/x\x1b]52;c;cm0gLXJmIH4K\x1b\\\x1b[2K\x1bE12:00:00.000 INF episode ended reward=1"
	// The same spelt in plain text: tint's colour mode turns a quoted
	// value's \x1b into ESC.
	spelt := `fs/y\x1b]52;c;cm0gLXJmIH4K\x1b\\\x1b[2K\x1bE12:00:00.000 INF episode ended reward=1`
	log.Warn("agent called "+forged, "method", forged, "error", errors.New("exit: "+forged), "args", []string{forged}, "spelt", spelt)
	tty.Close()
	out, _ := io.ReadAll(ptmx) // the pty's master reads until the slave is closed (EIO)
	t.Logf("%q", out)
	if !bytes.Contains(out, []byte("fs/x")) || !bytes.Contains(out, []byte("fs/y")) || !bytes.Contains(out, []byte("\x1b[93mWRN")) {
		t.Fatalf("control: the harness's text or tint's colours are missing: %q", out)
	}
	for _, seq := range []string{"\x1b]52;", "\x1b[2K", "\x1bE"} {
		if bytes.Contains(out, []byte(seq)) {
			t.Errorf("the harness's %q reached the terminal raw", seq)
		}
	}
}

// A JSON log writes a harness's C1 controls, DEL and bidirectional
// overrides (in the message, a string, an error, any other value) as JSON
// escapes: the JSON encoder escapes C0 controls (ESC) but left these raw,
// and a terminal that takes 8-bit controls reads U+009B as CSI (kubectl
// logs on a terminal). The record decodes to the same values (the control:
// the harness's text is all there, the characters included).
func TestJSONLogLeavesNoRawC1(t *testing.T) {
	var buf bytes.Buffer
	log := jsonLogger(t, &buf)
	forged := "fs/x\u009b2K\u009b1A\x7f\u202eINF episode ended reward=1"
	log.Warn("agent called "+forged, "method", forged, "error", errors.New("exit: "+forged), "args", []string{forged})
	out := buf.Bytes()
	for _, raw := range []string{"\u009b", "\x7f", "\u202e"} {
		if bytes.Contains(out, []byte(raw)) {
			t.Errorf("%q reached the log raw: %s", raw, out)
		}
	}
	var rec struct {
		Msg    string   `json:"msg"`
		Method string   `json:"method"`
		Error  string   `json:"error"`
		Args   []string `json:"args"`
	}
	if err := json.Unmarshal(out, &rec); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rec.Msg != "agent called "+forged || rec.Method != forged || rec.Error != "exit: "+forged || len(rec.Args) != 1 || rec.Args[0] != forged {
		t.Errorf("control: the record decodes to %+v", rec)
	}
}
