package process

import (
	"strings"
	"sync"
)

// maxTailLine bounds one line kept in a Tail; longer lines are cut.
const maxTailLine = 2048

// Tail keeps the last lines written to it, bounded by a line count and a byte
// total. It is safe for concurrent use.
type Tail struct {
	mu       sync.Mutex
	maxLines int
	maxBytes int
	lines    []string
	bytes    int
	partial  []byte // an unterminated line being assembled
	dropped  int    // lines dropped from the front
}

// NewTail returns a Tail keeping at most maxLines lines and maxBytes bytes.
func NewTail(maxLines, maxBytes int) *Tail {
	return &Tail{maxLines: maxLines, maxBytes: maxBytes}
}

// Write appends p, splitting it into lines. It never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := indexNL(p)
		if i < 0 {
			if room := maxTailLine - len(t.partial); room > 0 {
				t.partial = append(t.partial, p[:min(room, len(p))]...)
			}
			break
		}
		if room := maxTailLine - len(t.partial); room > 0 {
			t.partial = append(t.partial, p[:min(room, i)]...)
		}
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func indexNL(p []byte) int {
	for i, c := range p {
		if c == '\n' {
			return i
		}
	}
	return -1
}

func (t *Tail) push(line string) {
	t.lines = append(t.lines, line)
	t.bytes += len(line) + 1
	for len(t.lines) > t.maxLines || (t.bytes > t.maxBytes && len(t.lines) > 1) {
		t.bytes -= len(t.lines[0]) + 1
		t.lines[0] = ""
		t.lines = t.lines[1:]
		t.dropped++
	}
}

// String returns the kept lines, each ending in a newline, plus any
// unterminated last line.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, l := range t.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.Write(t.partial)
	return b.String()
}
