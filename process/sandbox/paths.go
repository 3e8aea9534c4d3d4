package sandbox

import (
	"path/filepath"
	"sort"
	"strings"
)

// A sandbox may show a host directory at another path inside (a Bind with
// a Dst, Config.WorkspaceDst, HomeDst, WorkspaceAt). The daemon keeps
// working in host paths — it writes the harness's files through them —
// while everything it tells the harness must name the inside paths. The
// sandbox is the one party that knows both views, so the translation is
// made here, at the boundary: Inside maps one path, and Launcher rewrites
// every host path in a launched command's program, arguments, environment
// and directory.

// pathMap says that host path host (and everything below it) is at inside
// within the sandbox.
type pathMap struct{ host, inside string }

// pathMaps lists where each bind's source appears inside, longest host
// path first. A source bound at several places is translated to the last
// of them: the workspace to WorkspaceAt when that is set (the harness's
// working directory). Binds at their own path are listed too, so that a
// path below one of them is left alone even inside a moved one.
func (c *Config) pathMaps() []pathMap {
	at := map[string]string{}
	var order []string
	for _, b := range c.allBinds() {
		src := filepath.Clean(b.Src)
		if _, ok := at[src]; !ok {
			order = append(order, src)
		}
		at[src] = filepath.Clean(b.dst())
	}
	moved := false
	out := make([]pathMap, 0, len(order))
	for _, src := range order {
		out = append(out, pathMap{host: src, inside: at[src]})
		moved = moved || src != at[src]
	}
	if !moved {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].host) > len(out[j].host) })
	return out
}

// Inside returns host path p as the sandbox's processes see it: below a
// bind's source, the same place below the bind's destination; any other
// path unchanged (the host's root is visible read-only at its own paths,
// less what is hidden). p is cleaned first when it is translated.
func (s *Sandbox) Inside(p string) string { return insidePath(s.maps, p) }

func insidePath(maps []pathMap, p string) string {
	if len(maps) == 0 || !filepath.IsAbs(p) {
		return p
	}
	c := filepath.Clean(p)
	for _, m := range maps {
		if rest, ok := under(c, m.host); ok {
			if m.host == m.inside {
				return p
			}
			return m.inside + rest
		}
	}
	return p
}

// under reports whether p is dir or below it, and returns the rest ("" or
// "/…").
func under(p, dir string) (string, bool) {
	if dir == "/" {
		return p, true
	}
	if p == dir {
		return "", true
	}
	if strings.HasPrefix(p, dir) && p[len(dir)] == '/' {
		return p[len(dir):], true
	}
	return "", false
}

// translate rewrites every host path of maps that occurs in s as a whole
// path: where the occurrence starts s or follows a character that cannot
// be part of a path name (not a letter, digit, '/', '.', '_', '-'), and
// ends s or is followed by '/' or such a character. So "HOME=/h/ep-1",
// "--mcp-config=/h/ep-1/mcp.json", "/h/ep-1/bin:/usr/bin" and a JSON
// string's "/h/ep-1/x" are translated, "/h/ep-10" and "/x/h/ep-1" are not.
func translate(maps []pathMap, s string) string {
	if len(maps) == 0 || !strings.Contains(s, "/") {
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
		for _, m := range maps {
			h := m.host
			if h == "/" || !strings.HasPrefix(s[i:], h) {
				continue
			}
			end := i + len(h)
			if end < len(s) && s[end] != '/' && nameByte(s[end]) {
				continue
			}
			if m.host != m.inside {
				b.WriteString(s[done:i])
				b.WriteString(m.inside)
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

// insideCommand returns c with every host path translated (translate):
// the program, each argument, each variable's value and the directory.
func insideCommand(maps []pathMap, c Command) Command {
	if len(maps) == 0 {
		return c
	}
	c.Path = translate(maps, c.Path)
	c.Dir = translate(maps, c.Dir)
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = translate(maps, a)
	}
	c.Args = args
	env := make([]string, len(c.Env))
	for i, kv := range c.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			env[i] = kv
			continue
		}
		env[i] = k + "=" + translate(maps, v)
	}
	c.Env = env
	return c
}
