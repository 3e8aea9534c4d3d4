package harness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/harnessd/harnessd/wire"
)

// recorder appends an episode's events to a JSONL file.
type recorder struct {
	f *os.File
	w *bufio.Writer
}

func openRecorder(dir, episodeID string) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := safeFileName(episodeID) + ".jsonl"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open trajectory record: %w", err)
	}
	return &recorder{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (r *recorder) write(e wire.Event) {
	if r == nil {
		return
	}
	b, err := wire.MarshalNoEscape(e)
	if err != nil {
		return
	}
	r.w.Write(b)
	r.w.WriteByte('\n')
}

func (r *recorder) flush() {
	if r != nil {
		r.w.Flush()
	}
}

func (r *recorder) close() {
	if r != nil {
		r.w.Flush()
		r.f.Close()
	}
}

// safeFileName maps an episode id onto a file name.
func safeFileName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." {
		s = "episode"
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
