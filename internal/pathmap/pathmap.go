// Package pathmap translates paths between two views of one file tree: a
// table of directories, each seen at one path in the first view (the
// host's) and at another in the second (a sandbox's). It owns only the
// string translation; it must not decide which directories are shown
// where (package process/sandbox does, from its binds).
package pathmap

import (
	"path/filepath"
	"sort"
	"strings"
)

// Dir says that directory From (and everything below it) is at To.
type Dir struct{ From, To string }

// Table translates paths by the longest directory that holds them.
type Table []Dir

// New returns the table of dirs (cleaned; for a directory given twice the
// last wins), or nil when no directory moves. A directory at its own path
// stays in the table, so that a path below it is left alone even inside a
// moved one.
func New(dirs []Dir) Table {
	at := map[string]string{}
	var order []string
	for _, d := range dirs {
		from := filepath.Clean(d.From)
		if _, ok := at[from]; !ok {
			order = append(order, from)
		}
		at[from] = filepath.Clean(d.To)
	}
	moved := false
	t := make(Table, 0, len(order))
	for _, from := range order {
		t = append(t, Dir{From: from, To: at[from]})
		moved = moved || from != at[from]
	}
	if !moved {
		return nil
	}
	sort.SliceStable(t, func(i, j int) bool { return len(t[i].From) > len(t[j].From) })
	return t
}

// Path returns absolute path p translated: below a directory of the
// table, the same place below where it is (p cleaned first); any other
// path unchanged.
func (t Table) Path(p string) string {
	if len(t) == 0 || !filepath.IsAbs(p) {
		return p
	}
	c := filepath.Clean(p)
	for _, d := range t {
		if rest, ok := under(c, d.From); ok {
			if d.From == d.To {
				return p
			}
			return d.To + rest
		}
	}
	return p
}

// under reports whether p is dir or below it, and returns the rest ("" or
// "/…").
func under(p, dir string) (string, bool) {
	switch {
	case dir == "/":
		return p, true
	case p == dir:
		return "", true
	case strings.HasPrefix(p, dir) && p[len(dir)] == '/':
		return p[len(dir):], true
	}
	return "", false
}

// Rewrite translates every directory of the table that occurs in s as a
// whole path: where the occurrence starts s or follows a character that
// cannot be part of a path name (not a letter, digit, '/', '.', '_', '-'),
// and ends s or is followed by '/' or such a character. So "HOME=/h/ep-1",
// "--mcp-config=/h/ep-1/mcp.json", "/h/ep-1/bin:/usr/bin" and a JSON
// string's "/h/ep-1/x" are translated, "/h/ep-10" and "/x/h/ep-1" are not.
func (t Table) Rewrite(s string) string {
	if len(t) == 0 || !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	i, done := 0, 0
	for i < len(s) {
		if s[i] != '/' || (i > 0 && nameByte(s[i-1])) {
			i++
			continue
		}
		matched := false
		for _, d := range t {
			if d.From == "/" || !strings.HasPrefix(s[i:], d.From) {
				continue
			}
			end := i + len(d.From)
			if end < len(s) && s[end] != '/' && nameByte(s[end]) {
				continue
			}
			if d.From != d.To {
				b.WriteString(s[done:i])
				b.WriteString(d.To)
				done = end
			}
			i, matched = end, true
			break
		}
		if !matched {
			i++
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// nameByte reports a byte that may continue a path: a letter, digit, '/',
// '.', '_', '-' or any byte of a multi-byte character.
func nameByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c >= 0x80:
		return true
	}
	return c == '/' || c == '.' || c == '_' || c == '-'
}

// Strings returns each of ss rewritten (a new slice; nil for nil).
func (t Table) Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = t.Rewrite(s)
	}
	return out
}

// Environ returns env ("NAME=value" entries) with each value rewritten.
func (t Table) Environ(env []string) []string {
	if env == nil {
		return nil
	}
	out := make([]string, len(env))
	for i, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			kv = k + "=" + t.Rewrite(v)
		}
		out[i] = kv
	}
	return out
}
