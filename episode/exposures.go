package episode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/internal/execpath"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
)

// Bounds of exposing a private directory entry by entry (see expand).
const (
	maxExpandEntries = 512
	maxExpandDepth   = 4
)

// ResolveCommand turns on execpath's resolution of the harness command
// for the sandbox's binds (on by default). Off, a sandbox binds only the
// program's directory, the absolute paths among its arguments and the
// PATH entries: tests turn it off for their negative controls (a harness
// that starts only thanks to the resolution). Set it before sessions are
// made; it is read once per session.
var ResolveCommand = true

// exposure is one host path the harness needs and why.
type exposure struct {
	path, why string
	// asked: named by sandbox.read_only (refusing it is an error).
	asked bool
}

// harnessEnviron is the environment the harness command is resolved in:
// the daemon's variables the harness inherits, its own on top. HOME stays
// the daemon's: PATH and the managers' shims are written in its terms.
func (s *Env) harnessEnviron() []string {
	h := &s.Config.Harness
	allow := append(append([]string(nil), process.DefaultEnvAllowlist...), h.PassEnv...)
	set := map[string]string{}
	for k, v := range h.Env {
		if k != "HOME" {
			set[k] = v
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		set["HOME"] = home
	}
	return process.Environ(os.Environ(), allow, set)
}

// exposures lists what the harness needs from the host that a hidden or
// untraversable directory would keep from it, as read-only binds, and the
// untraversable directories to cover with an empty one so that the binds
// have a way in. What it needs: the program's directory, the absolute
// paths among its arguments, every PATH entry (a node_modules/.bin entry
// brings its whole node_modules), what package execpath resolves the
// command to execute (symlink chains, interpreters, version managers'
// selected versions), and sandbox.read_only. Never bound: a path that is,
// is inside or holds the workspace root, the record directory or a file
// the daemon hides (its token and configuration files), nor one that
// holds the daemon's HOME or TMPDIR (their subtrees may be). Computed once
// per session: the command and PATH do not change between episodes.
func (s *Env) exposures() ([]sandbox.Bind, []string, error) {
	s.exposeOnce.Do(func() {
		s.exposeBinds, s.exposeHide, s.exposeErr = s.computeExposures()
	})
	return s.exposeBinds, s.exposeHide, s.exposeErr
}

// secretPaths are never bound nor held by a bind.
func (s *Env) secretPaths() []string {
	out := []string{s.Config.WorkspaceRoot()}
	if s.Config.RecordDir != "" {
		out = append(out, s.Config.RecordDir)
	}
	return append(out, s.Hide...)
}

// coveredPaths are hidden inside as a whole; subtrees may be bound back.
func coveredPaths() []string {
	out := []string{"/tmp", os.TempDir()}
	if h, err := os.UserHomeDir(); err == nil && h != "/" && h != "" {
		out = append(out, h)
	}
	return out
}

// refusal says why p is never bound ("" when it may be).
func (s *Env) refusal(p string) string {
	for _, h := range s.secretPaths() {
		h = filepath.Clean(h)
		if within(p, h) {
			return "it is inside " + h + ", which the sandbox hides (" + s.hiddenWhy(h) + ")"
		}
		if within(h, p) {
			return "it holds " + h + ", which the sandbox hides (" + s.hiddenWhy(h) + ")"
		}
	}
	for _, h := range coveredPaths() {
		if within(filepath.Clean(h), p) {
			return "it holds " + h + ", which the sandbox hides as a whole (" + s.hiddenWhy(h) + "); name a directory inside it"
		}
	}
	return ""
}

// hiddenWhy says why the sandbox hides h.
func (s *Env) hiddenWhy(h string) string {
	h = filepath.Clean(h)
	home, _ := os.UserHomeDir()
	switch {
	case h == filepath.Clean(s.Config.WorkspaceRoot()):
		return "the workspace root: every session's directories"
	case s.Config.RecordDir != "" && h == filepath.Clean(s.Config.RecordDir):
		return "record_dir: every episode's trajectory"
	case home != "" && h == filepath.Clean(home):
		return "the daemon's HOME: its credentials and configuration"
	case h == "/tmp" || h == filepath.Clean(os.TempDir()):
		return "the host's temporary directory: each sandbox has its own"
	}
	for _, x := range s.Hide {
		if filepath.Clean(x) == h {
			return "a file the daemon keeps from every harness: its token or configuration"
		}
	}
	for _, x := range s.exposeHide {
		if x == h {
			return "a directory the harness's uid may not traverse"
		}
	}
	return "hidden"
}

func (s *Env) computeExposures() ([]sandbox.Bind, []string, error) {
	h := &s.Config.Harness
	env := s.harnessEnviron()
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	var want []exposure
	if len(h.Command) > 0 {
		// Version files (.python-version, .tool-versions, .nvmrc) are
		// searched from where the harness starts: its workspace, seeded
		// from workspace.template.
		dir := s.Config.Workspace.Template
		if dir != "" {
			dir, _ = filepath.Abs(dir)
		}
		res := execpath.Resolve(execpath.Request{Command: h.Command, Env: env, Dir: dir})
		prog := h.Command[0]
		if res.Program != "" {
			prog = res.Program
		}
		// The program's directory and every absolute path among its
		// arguments (a script run by an interpreter: node /…/cli.js),
		// with their siblings.
		for i, a := range append([]string{prog}, h.Command[1:]...) {
			if !filepath.IsAbs(a) {
				continue
			}
			fi, err := os.Stat(a)
			if err != nil {
				continue
			}
			why := "the harness program"
			if i > 0 {
				why = "an argument of the harness command"
			}
			dir := a
			if !fi.IsDir() {
				dir = filepath.Dir(a)
			}
			want = append(want, exposure{path: dir, why: why})
			if real, err := filepath.EvalSymlinks(a); err == nil && real != a {
				want = append(want, exposure{path: filepath.Dir(real), why: why + " (its link's target)"})
			}
		}
		if ResolveCommand {
			for _, n := range res.Needs {
				want = append(want, exposure{path: n.Path, why: n.Why})
			}
		}
	}
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) {
			want = append(want, exposure{path: d, why: "a PATH entry"})
		}
	}
	for _, p := range s.Config.Sandbox.ReadOnly {
		want = append(want, exposure{path: p, why: "sandbox.read_only", asked: true})
	}
	covered := coveredPaths()
	var (
		binds   []sandbox.Bind
		hide    []string
		errs    []error
		seen    = map[string]bool{}
		hideSet = map[string]bool{}
	)
	for _, w := range want {
		p := filepath.Clean(w.path)
		fi, err := os.Stat(p)
		if err != nil {
			if w.asked {
				errs = append(errs, fmt.Errorf("sandbox.read_only %s: %w", p, err))
			}
			continue
		}
		if fi.IsDir() {
			p = exposeRoot(p)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		split := false
		// A bind follows a link at its source: what the link names must
		// pass too.
		why := s.refusal(p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p && why == "" {
			if r := s.refusal(real); r != "" {
				why = "it is a link to " + real + ": " + r
			}
		}
		if why != "" {
			// A PATH entry that is the daemon's HOME: never bound, the
			// bind would show what the hiding covers. A harness program
			// there is not found in the sandbox, which fails the reset
			// with that reason. A directory that only holds a hidden file
			// (the harness beside the configuration file that names it)
			// is bound entry by entry, without it.
			if w.asked {
				errs = append(errs, fmt.Errorf("sandbox.read_only %s is refused: %s", p, why))
				continue
			}
			if _, sp := s.entryPolicy(p); !sp || !fi.IsDir() {
				continue
			}
			split = true
		}
		under := false
		for _, c := range covered {
			if within(p, filepath.Clean(c)) {
				under = true
			}
		}
		if a := untraversable(filepath.Dir(p)); a != "" {
			under = true
			if !hideSet[a] {
				hideSet[a] = true
				hide = append(hide, a)
			}
		}
		private := fi.IsDir() && fi.Mode().Perm()&0o001 == 0
		if !under && !private && !w.asked {
			continue // visible inside as on the host (what it holds hidden is covered)
		}
		if private || split {
			if !hideSet[p] && !under {
				hideSet[p] = true
				hide = append(hide, p)
			}
			binds = append(binds, expand(p, 0, s.entryPolicy)...)
			continue
		}
		binds = append(binds, sandbox.Bind{Src: p})
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("sandbox.read_only: %w", errors.Join(errs...))
	}
	s.exposeHide = hide // hiddenWhy reads it
	binds = outermostBinds(binds)
	if s.Logger != nil {
		srcs := make([]string, len(binds))
		for i, b := range binds {
			srcs[i] = b.Src
		}
		s.Logger.Debug("the sandbox binds back what the harness needs", "binds", srcs, "covered", hide)
	}
	return binds, hide, nil
}

// entryPolicy says how a directory entry is bound by expand: skip it (it
// is or lies inside a hidden path, or holds the daemon's HOME or TMPDIR),
// split it (it holds a hidden path, which the split leaves out), or bind
// it whole (neither).
func (s *Env) entryPolicy(p string) (skip, split bool) {
	for _, c := range coveredPaths() {
		if within(filepath.Clean(c), p) {
			return true, false
		}
	}
	for _, h := range s.secretPaths() {
		h = filepath.Clean(h)
		if within(p, h) {
			return true, false
		}
		if within(h, p) {
			split = true
		}
	}
	return false, split
}

// expand binds the entries of a directory one by one: one the harness's
// uid may not traverse, or one that holds a hidden path. Inside the
// sandbox the directory is a fresh mount point (mode 0755 in the cover's
// tmpfs) and each entry keeps its own mode, so a 0700 directory's 0755
// program runs without any change on the host, and a hidden entry is
// simply absent. Entries that are private directories or hold a hidden
// path are expanded in turn; the walk is bounded.
func expand(dir string, depth int, policy func(string) (skip, split bool)) []sandbox.Bind {
	ents, err := os.ReadDir(dir)
	if err != nil || depth > maxExpandDepth {
		return nil
	}
	var out []sandbox.Bind
	for i, e := range ents {
		if i >= maxExpandEntries {
			break
		}
		p := filepath.Join(dir, e.Name())
		skip, split := policy(p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			if rs, rsplit := policy(real); rs || rsplit {
				skip = true // a link to what is, or holds, what the sandbox hides
			}
		}
		if skip {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() && (split || fi.Mode().Perm()&0o001 == 0) {
			out = append(out, expand(p, depth+1, policy)...)
			continue
		}
		if fi.Mode().IsRegular() || fi.IsDir() {
			out = append(out, sandbox.Bind{Src: p})
		}
	}
	return out
}

// outermostBinds sorts binds by path and drops those inside another (a
// bind's subtree comes with it; a later parent bind would cover it).
func outermostBinds(binds []sandbox.Bind) []sandbox.Bind {
	sort.Slice(binds, func(i, j int) bool { return binds[i].Src < binds[j].Src })
	var out []sandbox.Bind
	for _, b := range binds {
		if n := len(out); n > 0 && within(b.Src, out[n-1].Src) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// exposeRoot widens a directory to what a program there needs: a
// node_modules/.bin entry, or anything inside node_modules, to the
// outermost node_modules.
func exposeRoot(d string) string {
	if i := strings.Index(d, "/node_modules"); i >= 0 {
		rest := d[i+len("/node_modules"):]
		if rest == "" || rest[0] == '/' {
			return d[:i+len("/node_modules")]
		}
	}
	return d
}

// untraversable returns the outermost ancestor of p (p included, / not)
// that others may not search (no o+x), "" when every one is searchable.
func untraversable(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := ""
	for _, part := range parts {
		cur += "/" + part
		fi, err := os.Stat(cur)
		if err != nil {
			return ""
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return cur
		}
	}
	return ""
}
