package oneshot

import (
	"bytes"
	"regexp"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/internal/vt"
)

// maxSessionID bounds a captured session id.
const maxSessionID = 256

// capture finds the session id in a turn's output: by regex in stdout and
// stderr lines, or by a JSON field in stdout lines. The first id found in
// the turn wins. It is safe for concurrent use (stderr arrives from the
// process's reader).
type capture struct {
	re    *regexp.Regexp
	field string

	mu      sync.Mutex
	id      string
	partial []byte // an unfinished stderr line
}

func (c *capture) found() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

func (c *capture) set(id string) {
	id = strings.TrimSpace(id)
	if id == "" || len(id) > maxSessionID {
		return
	}
	c.mu.Lock()
	if c.id == "" {
		c.id = id
	}
	c.mu.Unlock()
}

// stdout looks at one stdout line.
func (c *capture) stdout(line []byte) {
	if c.field != "" {
		if m, ok := object(line); ok {
			if s, ok := get(m, c.field).(string); ok {
				c.set(s)
			}
		}
	}
	c.match(line)
}

func (c *capture) match(line []byte) {
	if c.re == nil {
		return
	}
	s := vt.Strip(string(line))
	m := c.re.FindStringSubmatch(s)
	switch {
	case m == nil:
	case c.re.SubexpIndex("session_id") > 0:
		c.set(m[c.re.SubexpIndex("session_id")])
	case len(m) > 1:
		c.set(m[1])
	default:
		c.set(m[0])
	}
}

// Write takes stderr output and looks at each complete line.
func (c *capture) Write(p []byte) (int, error) {
	if c.re == nil {
		return len(p), nil
	}
	c.mu.Lock()
	buf := append(c.partial, p...)
	c.partial = nil
	c.mu.Unlock()
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		c.match(buf[:i])
		buf = buf[i+1:]
	}
	if len(buf) > 4096 {
		buf = buf[len(buf)-4096:]
	}
	c.mu.Lock()
	c.partial = append([]byte(nil), buf...)
	c.mu.Unlock()
	return len(p), nil
}

// flush looks at an unfinished last stderr line.
func (c *capture) flush() {
	c.mu.Lock()
	rest := c.partial
	c.partial = nil
	c.mu.Unlock()
	if len(rest) > 0 {
		c.match(rest)
	}
}
