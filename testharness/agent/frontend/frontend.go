// Package frontend is what the fake agent's protocol front ends share: the
// start-up behaviours every front end honours (Options, Start), a stdout
// writer of whole lines (LineWriter), and the environment tool bridge of
// the front ends that read it from HARNESSD_MCP_URL (EnvTools).
//
// It owns no wire protocol and no directive: the directives are
// testharness/agent's, each protocol is one package beside this one
// (jsonl, acp, streamjson, tui, oneshot). Like the rest of the fake agent it
// must not import harnessd's own packages: it plays a foreign program.
package frontend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/testharness/agent"
)

// Options are the start-up behaviours of the fake agent, shared by every
// front end.
type Options struct {
	SlowStart     time.Duration // wait before announcing ready
	CrashOnStart  int           // exit with this code before ready (0: don't)
	NeverReady    bool          // never announce ready
	IgnoreTerm    bool          // ignore SIGTERM from the start
	StartupStderr string        // written to stderr at start
	NoisyStart    bool          // print a non-JSON banner line before ready
	MCPProtocol   string        // protocol version for MCP calls
}

// Start applies the start-up behaviours every front end shares, in order:
// ignore SIGTERM, write the start-up stderr line, crash on start. It returns
// the exit code and true when the front end must exit at once (a crash on
// start). Slow starts, banners and never being ready are the front end's:
// each is ready in its own way.
func Start(opts Options, stderr io.Writer) (code int, exit bool) {
	if opts.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if opts.StartupStderr != "" {
		fmt.Fprintln(stderr, opts.StartupStderr)
	}
	if opts.CrashOnStart != 0 {
		fmt.Fprintf(stderr, "fatal: crash on start (code %d)\n", opts.CrashOnStart)
		return opts.CrashOnStart, true
	}
	return 0, false
}

// EnvTools returns the tool bridge named by HARNESSD_MCP_URL (bearer
// HARNESSD_MCP_TOKEN), or nil when the variable is unset. The caller closes
// it.
func EnvTools(opts Options) *agent.MCPTools {
	url := os.Getenv("HARNESSD_MCP_URL")
	if url == "" {
		return nil
	}
	return &agent.MCPTools{URL: url, Token: os.Getenv("HARNESSD_MCP_TOKEN"), ProtocolVersion: opts.MCPProtocol}
}

// SleepForever blocks until a signal ends the process. (A timer keeps the
// runtime from declaring a deadlock when no other goroutine is left.)
func SleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// LineWriter writes whole lines to stdout under a lock, each flushed at
// once; after Close it drops what it is given.
type LineWriter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	closed bool
}

// NewLineWriter writes to w (buffered, 64 KiB) and closes it on Close.
func NewLineWriter(w io.WriteCloser) *LineWriter {
	return &LineWriter{w: bufio.NewWriterSize(w, 64<<10), closer: w}
}

// Line writes b and a newline.
func (lw *LineWriter) Line(b []byte) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.closed {
		return
	}
	lw.w.Write(b)
	lw.w.WriteByte('\n')
	lw.w.Flush()
}

// JSON writes v as one line of JSON (HTML characters not escaped).
func (lw *LineWriter) JSON(v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	lw.Line(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
}

// Close flushes and closes stdout; later lines are dropped.
func (lw *LineWriter) Close() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.closed = true
	lw.w.Flush()
	if lw.closer != nil {
		lw.closer.Close()
	}
}
