package exposure

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/wire"
)

// maxExplained bounds the paths one failure's explanation names.
const maxExplained = 3

// pathInText finds absolute (or ~/) paths in a message or stderr tail:
// "…/shims/python3: line 12: /root/.pyenv/libexec/pyenv: No such file",
// `program "/x/y" not found`.
var pathInText = regexp.MustCompile(`(?:^|[\s"'(=\x60])(~?/[^\s"'():;,\x60]+)`)

// envNotFound matches what env(1) and the shells say of a program their
// PATH lacks: "env: 'python3': No such file or directory", "exec:
// agent: not found" (dash), "agent: command not found" (bash).
var envNotFound = regexp.MustCompile(`(?:env: [‘'"]?([^‘’'":/\s]+)[’'"]?: No such file or directory|(?:exec|\d+): ([^:/\s]+): not found|([^:/\s]+): command not found)`)

// lookHarnessPath finds name in the harness's PATH on the host.
func (s *View) lookHarnessPath(name string) string {
	for _, kv := range s.HarnessEnviron() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(v) {
				p := filepath.Join(d, name)
				if fi, err := os.Stat(p); err == nil && !fi.IsDir() && filepath.IsAbs(d) {
					return p
				}
			}
		}
	}
	return ""
}

// Explain adds to a start-up failure of a harness sandboxed in the episode
// directory root what the sandbox keeps from it: each path its message or
// stderr tail names that is hidden or unreadable inside, why, and the
// knobs that change it (sandbox.read_only, --isolation process; not the
// latter for a simulated user's failure: it runs in a sandbox of its own in
// every isolation). It changes nothing when no such path is named.
func (s *View) Explain(root string, f *harness.Failure) {
	if f == nil {
		return
	}
	var notes []string
	seen := map[string]bool{}
	home, _ := os.UserHomeDir()
	side := f.Type == wire.FailureUser
	for _, m := range pathInText.FindAllStringSubmatch(f.Message+"\n"+f.StderrTail, -1) {
		p := strings.TrimRight(m[1], ".")
		if strings.HasPrefix(p, "~/") && home != "" {
			p = filepath.Join(home, p[2:])
		}
		p = filepath.Clean(p)
		if seen[p] || len(notes) >= maxExplained || Within(p, "/proc") {
			continue // /proc/PID/root/... is another process's view, not the host's
		}
		seen[p] = true
		if n := s.whyUnseen(root, p, "", side); n != "" {
			notes = append(notes, n)
			continue
		}
		// A script the sandbox shows whose interpreter it hides fails
		// as "not found" too.
		if interp := shebangInterpreter(p); interp != "" && !seen[interp] {
			seen[interp] = true
			if n := s.whyUnseen(root, interp, "the interpreter of "+p+", ", side); n != "" {
				notes = append(notes, n)
			}
		}
	}
	// "/usr/bin/env: 'python3': No such file or directory": a name the
	// sandbox's PATH does not find, which the host's does.
	for _, m := range envNotFound.FindAllStringSubmatch(f.StderrTail, -1) {
		if len(notes) >= maxExplained {
			break
		}
		name := m[1] + m[2] + m[3]
		p := s.lookHarnessPath(name)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if n := s.whyUnseen(root, p, name+" (found on the host's PATH as "+p+"): ", side); n != "" {
			notes = append(notes, n)
		}
	}
	if len(notes) == 0 {
		return
	}
	f.Message += "; in the sandbox " + strings.Join(notes, "; ")
}

// whyUnseen explains why the existing host path p is hidden or unreadable
// inside a sandbox of the episode whose directory is root ("" when it is
// not, or does not exist on the host either).
func (s *View) whyUnseen(root, p, what string, side bool) string {
	binds, hide, _ := s.Binds()
	return s.whyUnseenWith(binds, hide, root, p, what, side)
}

// SideUnseen says why a side process running command (a simulated user's)
// would not find its program in its sandbox: hidden there, or visible but
// not readable; "" when it would, or the program is not on the host.
func (s *View) SideUnseen(command []string) string {
	if len(command) == 0 {
		return ""
	}
	binds, covers := s.ForCommand(command)
	return s.whyUnseenWith(binds, covers, "", s.sideProgram(command[0]), "", true)
}

// whyUnseenWith is whyUnseen for a sandbox that binds binds back and
// covers hide (beyond what every sandbox hides).
func (s *View) whyUnseenWith(binds []sandbox.Bind, hide []string, root, p, what string, side bool) string {
	orProcess, instead, who := ", or run with --isolation process", "run with --isolation process", "the harness's uid"
	if side {
		orProcess, instead, who = "", "move it elsewhere (a simulated user runs in a sandbox of its own in every isolation)", "its uid"
	}
	fi, err := os.Stat(p)
	if err != nil {
		return ""
	}
	if Within(p, root) {
		return ""
	}
	for _, b := range binds {
		if Within(p, b.Src) {
			if fi.Mode().Perm()&0o005 == 0 || (fi.IsDir() && fi.Mode().Perm()&0o001 == 0) {
				return fmt.Sprintf("%s%s is visible but not readable by %s (mode %04o on the host); "+
					"make it readable by others%s", what, p, who, fi.Mode().Perm(), orProcess)
			}
			return ""
		}
	}
	hidden := append(append(s.HiddenPaths(), coveredPaths()...), hide...)
	cover := ""
	for _, h := range hidden {
		h = filepath.Clean(h)
		if Within(p, h) && len(h) > len(cover) {
			cover = h
		}
	}
	if cover == "" {
		if a := untraversable(p); a != "" {
			return fmt.Sprintf("%s%s is unreachable: %s is not searchable by %s; "+
				"expose it with sandbox.read_only: [%s]%s", what, p, a, who, p, orProcess)
		}
		return ""
	}
	suggest := p
	if rel, err := filepath.Rel(cover, p); err == nil && rel != "." {
		suggest = filepath.Join(cover, strings.SplitN(rel, "/", 2)[0])
	}
	knob := fmt.Sprintf("expose it with sandbox.read_only: [%s] (flag --sandbox-ro %s)%s", suggest, suggest, orProcess)
	if r := s.refusal(suggest); r != "" {
		knob = "it cannot be exposed (" + r + "); " + instead
	}
	return fmt.Sprintf("%s%s is hidden: it is inside %s, %s; %s", what, p, cover, s.hiddenWhy(cover), knob)
}

// shebangInterpreter returns the absolute interpreter of a "#!" script at
// p ("" when it is none, or env). The harness names p: only a regular
// file is read, opened without blocking (a FIFO the harness made, named
// in its stderr, held a daemon thread in open for good).
func shebangInterpreter(p string) string {
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "" // replaced since the Stat
	}
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	if !bytes.HasPrefix(buf[:n], []byte("#!")) {
		return ""
	}
	line, _, _ := bytes.Cut(buf[2:n], []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) || filepath.Base(fields[0]) == "env" {
		return ""
	}
	return filepath.Clean(fields[0])
}
