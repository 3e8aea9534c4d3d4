package bridge

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// orDefault returns l, or slog.Default() when l is nil.
func orDefault(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// demoteHandler logs records below Warn one level lower (Info -> Debug). It
// is given to mcp-go's server, which logs every request at Info.
type demoteHandler struct{ slog.Handler }

// Enabled reports whether the demoted level is enabled.
func (h demoteHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

// Handle logs r at its demoted level.
func (h demoteHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the demotion.
func (h demoteHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return demoteHandler{h.Handler.WithAttrs(a)}
}

// WithGroup keeps the demotion.
func (h demoteHandler) WithGroup(n string) slog.Handler {
	return demoteHandler{h.Handler.WithGroup(n)}
}

func demote(l slog.Level) slog.Level {
	if l >= slog.LevelWarn || l <= slog.LevelDebug {
		return l
	}
	return slog.LevelDebug
}

// maxStderrLine bounds one logged stderr line of an upstream.
const maxStderrLine = 4096

// stderrLog is an io.Writer that logs an upstream's stderr line by line at
// Debug level (its tail is kept by package process for error reports).
type stderrLog struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

// Write logs every complete line of p (bounded) and keeps the rest.
func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxStderrLine - len(w.buf)
			if room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		room := maxStderrLine - len(w.buf)
		if room > 0 {
			w.buf = append(w.buf, p[:min(room, i)]...)
		}
		w.log.Debug("upstream stderr", "line", string(bytes.TrimRight(w.buf, "\r")))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}
