package process

import (
	"io"
	"log/slog"
	"time"
)

// Defaults for Spec fields left zero.
const (
	DefaultMaxLineBytes    = 4 << 20 // 4 MiB per stdout line
	DefaultStderrTailLines = 50
	DefaultStderrTailBytes = 16 << 10
	DefaultLineBuffer      = 256 // stdout lines buffered before the child blocks
	// DefaultMaxStartupBytes bounds the output a child writes before it is
	// ready (Spec.MaxStartupBytes), as episode.output_limit's default
	// bounds a turn's.
	DefaultMaxStartupBytes = 16 << 20
	DefaultKillWait        = 5 * time.Second
)

// Stdio selects how the child's stdout is consumed.
type Stdio int

const (
	// StdioLines splits stdout into lines, read by Process.ReadLine on the
	// caller's goroutine or delivered by Process.Lines.
	StdioLines Stdio = iota
	// StdioRaw hands stdout to the caller as an io.Reader (Process.Stdout).
	StdioRaw
)

// PTY requests a pseudo-terminal as the child's stdin, stdout and stderr.
// The child runs in a new session with the terminal as its controlling tty.
type PTY struct {
	Rows, Cols uint16 // default 40x120
}

// Spec describes a process tree to start. Env is used exactly as given: build
// it with Environ so that the daemon's own environment does not leak.
type Spec struct {
	// Name labels the tree in logs and errors (e.g. "harness", "tools:db").
	Name string
	// Path is the program to run; it is looked up in PATH of Env if it has no slash.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Dir is the working directory; empty means the daemon's.
	Dir string
	// Env is the complete environment of the child.
	Env []string

	// PTY, when set, runs the child on a pseudo-terminal. Output then arrives
	// as chunks (Process.Output) rather than lines.
	PTY *PTY
	// Stdio selects line or raw stdout in pipe mode.
	Stdio Stdio

	// MaxLineBytes bounds one stdout line; longer lines arrive as a Line with
	// TooLong set and only a prefix kept.
	MaxLineBytes int
	// MaxStartupBytes bounds what the child may write to stdout (its
	// terminal in PTY mode) while it is not ready yet: WaitReady and
	// CheckStartupOutput fail with a *StartupOutputError beyond it, so
	// that what is kept of start-up output stays bounded in bytes.
	MaxStartupBytes int64
	// LineBuffer is how many stdout lines Process.Lines buffers before the
	// child blocks (ReadLine buffers nothing beyond the pipe).
	LineBuffer int
	// StderrTailLines and StderrTailBytes bound the kept stderr tail.
	StderrTailLines int
	StderrTailBytes int
	// Stderr, if set, also receives everything the child writes to stderr,
	// as it is read (chunks, not whole lines).
	Stderr io.Writer

	// Logger receives lifecycle records; nil means slog.Default().
	Logger *slog.Logger

	// Launcher, when set, starts the leader (in a sandbox) instead of the
	// daemon forking it: Path is then resolved where it runs, the tree
	// gets no cgroup of the Supervisor's (the Launcher bounds it) and Stop
	// signals and kills it through the Launcher. Nil starts a plain child.
	Launcher Launcher
}

func (s *Spec) withDefaults() Spec {
	c := *s
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.MaxStartupBytes <= 0 {
		c.MaxStartupBytes = DefaultMaxStartupBytes
	}
	if c.LineBuffer <= 0 {
		c.LineBuffer = DefaultLineBuffer
	}
	if c.StderrTailLines <= 0 {
		c.StderrTailLines = DefaultStderrTailLines
	}
	if c.StderrTailBytes <= 0 {
		c.StderrTailBytes = DefaultStderrTailBytes
	}
	if c.Name == "" {
		c.Name = c.Path
	}
	if c.PTY != nil {
		p := *c.PTY
		if p.Rows == 0 {
			p.Rows = 40
		}
		if p.Cols == 0 {
			p.Cols = 120
		}
		c.PTY = &p
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
