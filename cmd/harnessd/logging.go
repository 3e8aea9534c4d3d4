package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/lmittmann/tint"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/harnessd/harnessd/internal/termtext"
)

// logFlags are the logging flags every command shares.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&l.format, "log-format", "auto", "log format: auto (tint on a terminal, JSON otherwise), text, json")
}

// logger builds the logger: human-readable (tint) on a terminal, JSON
// otherwise. JSON logs give every duration in seconds, as a number
// (durationSeconds); tint keeps Go's "1.5s". It also becomes slog's default, so stray library output lands
// in the same stream.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("invalid --log-level %q (debug, info, warn or error)", l.level)
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	var h slog.Handler
	switch strings.ToLower(l.format) {
	case "auto":
		if tty {
			h = tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: "15:04:05.000", NoColor: os.Getenv("NO_COLOR") != "", ReplaceAttr: terminalSafe})
		} else {
			h = slog.NewJSONHandler(jsonSafeWriter{w}, &slog.HandlerOptions{Level: level, ReplaceAttr: durationSeconds})
		}
	case "tint", "text":
		h = tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: "15:04:05.000", NoColor: !tty || os.Getenv("NO_COLOR") != "", ReplaceAttr: terminalSafe})
	case "json":
		h = slog.NewJSONHandler(jsonSafeWriter{w}, &slog.HandlerOptions{Level: level, ReplaceAttr: durationSeconds})
	default:
		return nil, fmt.Errorf("invalid --log-format %q (auto, text or json)", l.format)
	}
	log := slog.New(h)
	slog.SetDefault(log)
	return log, nil
}

// durationSeconds is the JSON handler's ReplaceAttr: a time.Duration
// attribute becomes its seconds as a float under the same key ("elapsed":
// 0.25), so every duration in a JSON log has one unit (slog's default is
// integer nanoseconds, beside strings like "20s" where code formatted one).
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key, a.Value.Duration().Seconds())
	}
	return a
}

// terminalSafe is tint's ReplaceAttr: a string, an error or any other
// value's text, the message too, with what a terminal would act on
// written as escapes (logSafe). tint's colour mode writes a value's ESC
// bytes as they are, and the daemon logs a harness's text (an ACP
// method's name, a failure's stderr tail): as it came, it could set the
// operator's clipboard (OSC 52), erase lines or forge one.
func terminalSafe(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value.Resolve(); v.Kind() {
	case slog.KindString:
		if e := logSafe(v.String()); e != v.String() {
			return slog.String(a.Key, e)
		}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case slog.Level:
		case error:
			if e := logSafe(x.Error()); e != x.Error() {
				return slog.Any(a.Key, escapedError{e, x})
			}
		default:
			if s := fmt.Sprintf("%+v", x); logSafe(s) != s {
				return slog.String(a.Key, logSafe(s))
			}
		}
	}
	return a
}

// logSafe is termtext.Escape with every `\x1b` (four characters) written
// `\u001b`: tint's colour mode quotes a value and then turns each `\x1b`
// of the quoted text back into an ESC byte, so the escape itself, or a
// harness's plain text spelling it, would be an escape sequence again.
func logSafe(s string) string {
	return strings.ReplaceAll(termtext.Escape(s), `\x1b`, `\u001b`)
}

// escapedError is an error whose text is shown escaped; it unwraps to the
// error it stands for (tint still paints it as an error).
type escapedError struct {
	text string
	err  error
}

func (e escapedError) Error() string { return e.text }
func (e escapedError) Unwrap() error { return e.err }

// jsonSafeWriter writes each JSON log record with the characters the JSON
// encoder leaves raw but a terminal acts on (DEL, C1 controls, bidirectional
// overrides: a harness's text in a value) as JSON escapes
// (termtext.EscapeJSONText): the same JSON to a log collector, inert on a
// terminal (kubectl logs, docker logs). slog writes a record in one Write.
type jsonSafeWriter struct{ w io.Writer }

func (j jsonSafeWriter) Write(p []byte) (int, error) {
	q := termtext.EscapeJSONText(p)
	if _, err := j.w.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}
