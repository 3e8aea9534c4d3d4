package exposure

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/environ"
	"github.com/harnessd/harnessd/internal/execpath"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox"
)

// Bounds of exposing a private directory entry by entry (see expand).
const (
	maxExpandEntries = 512
	maxExpandDepth   = 4
)

// View is what the sandboxes of one session show of the host. Its
// answers are computed once (the command and PATH do not change between
// episodes); it is safe for concurrent use.
type View struct {
	cfg     *config.Config
	hide    []string // further host paths every sandbox covers
	resolve bool     // execpath's resolution of the command
	log     *slog.Logger

	once   sync.Once
	binds  []sandbox.Bind
	covers []string // the untraversable directories covered for the binds
	err    error

	secretOnce  sync.Once
	secrets     []string      // secretPaths: as named and as resolved
	secretFiles []os.FileInfo // the regular files among them

	sideMu sync.Mutex
	side   map[string]sideExposure // ForCommand's answers by command
}

// sideExposure is one answer of ForCommand.
type sideExposure struct {
	binds  []sandbox.Bind
	covers []string
}

// maxSideAnswers bounds ForCommand's kept answers (a taskset's MCP
// servers may be many commands); past it they are computed again.
const maxSideAnswers = 256

// New returns the view of the environment cfg (normalized): hide lists
// further host paths every sandbox covers (the daemon's token and
// configuration files); resolve turns on package execpath's resolution of
// the harness command for the binds; log, when set, is told of them.
func New(cfg *config.Config, hide []string, resolve bool, log *slog.Logger) *View {
	return &View{cfg: cfg, hide: hide, resolve: resolve, log: log}
}

// exposure is one host path the harness needs and why.
type exposure struct {
	path, why string
	// asked: named by sandbox.read_only (refusing it is an error).
	asked bool
}

// HarnessEnviron is the environment the harness command is resolved in:
// the daemon's variables the harness inherits, its own on top. HOME stays
// the daemon's: PATH and the managers' shims are written in its terms.
func (s *View) HarnessEnviron() []string {
	h := &s.cfg.Harness
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

// Binds lists what the harness needs from the host that a hidden or
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
func (s *View) Binds() ([]sandbox.Bind, []string, error) {
	s.once.Do(func() {
		s.binds, s.covers, s.err = s.computeExposures()
	})
	return s.binds, s.covers, s.err
}

// HiddenPaths are covered inside every sandbox of the session: every
// session's directories (this episode's own are bound back), the record
// directory, the daemon's HOME and what the daemon adds (its token and
// configuration files).
func (s *View) HiddenPaths() []string {
	out := []string{s.cfg.WorkspaceRoot()}
	if s.cfg.RecordDir != "" {
		out = append(out, s.cfg.RecordDir)
	}
	if h, err := os.UserHomeDir(); err == nil && h != "/" && h != "" {
		out = append(out, h)
	}
	return append(out, s.hide...)
}

// Within reports whether p is dir or inside it.
func Within(p, dir string) bool {
	dir = filepath.Clean(dir)
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// secretPaths are never bound nor held by a bind: each as named and, when
// a link in it leads elsewhere, as resolved (a configuration named through
// a linked directory is the same file under its real name).
func (s *View) secretPaths() []string {
	s.secretOnce.Do(func() {
		named := []string{s.cfg.WorkspaceRoot()}
		if s.cfg.RecordDir != "" {
			named = append(named, s.cfg.RecordDir)
		}
		for _, p := range append(named, s.hide...) {
			p = filepath.Clean(p)
			s.secrets = append(s.secrets, p)
			if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
				s.secrets = append(s.secrets, real)
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				s.secretFiles = append(s.secretFiles, fi)
			}
		}
	})
	return s.secrets
}

// isSecretFile reports whether fi is one of the hidden files under
// another name (a hard link to it).
func (s *View) isSecretFile(fi os.FileInfo) bool {
	s.secretPaths()
	for _, x := range s.secretFiles {
		if os.SameFile(fi, x) {
			return true
		}
	}
	return false
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
func (s *View) refusal(p string) string {
	for _, h := range s.secretPaths() {
		h = filepath.Clean(h)
		if Within(p, h) {
			return "it is inside " + h + ", which the sandbox hides (" + s.hiddenWhy(h) + ")"
		}
		if Within(h, p) {
			return "it holds " + h + ", which the sandbox hides (" + s.hiddenWhy(h) + ")"
		}
	}
	for _, h := range coveredPaths() {
		if Within(filepath.Clean(h), p) {
			return "it holds " + h + ", which the sandbox hides as a whole (" + s.hiddenWhy(h) + "); name a directory inside it"
		}
	}
	return ""
}

// hiddenWhy says why the sandbox hides h.
func (s *View) hiddenWhy(h string) string {
	h = filepath.Clean(h)
	home, _ := os.UserHomeDir()
	switch {
	case h == filepath.Clean(s.cfg.WorkspaceRoot()):
		return "the workspace root: every session's directories"
	case s.cfg.RecordDir != "" && h == filepath.Clean(s.cfg.RecordDir):
		return "record_dir: every episode's trajectory"
	case home != "" && h == filepath.Clean(home):
		return "the daemon's HOME: its credentials and configuration"
	case h == "/tmp" || h == filepath.Clean(os.TempDir()):
		return "the host's temporary directory: each sandbox has its own"
	}
	for _, x := range s.hide {
		if filepath.Clean(x) == h {
			return "a file the daemon keeps from every harness: its token or configuration"
		}
	}
	for _, x := range s.covers {
		if x == h {
			return "a directory the harness's uid may not traverse"
		}
	}
	return "hidden"
}

func (s *View) computeExposures() ([]sandbox.Bind, []string, error) {
	h := &s.cfg.Harness
	env := s.HarnessEnviron()
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
		dir := s.cfg.Workspace.Template
		if dir != "" {
			dir, _ = filepath.Abs(dir)
		}
		res := execpath.Resolve(execpath.Request{Command: h.Command, Env: env, Dir: dir})
		prog := h.Command[0]
		if res.Program != "" {
			prog = res.Program
		}
		want = append(want, commandPaths(prog, h.Command[1:], "the harness program", "an argument of the harness command")...)
		if s.resolve {
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
	for _, p := range s.cfg.Sandbox.ReadOnly {
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
		pl := s.place(p, fi, covered, w.asked)
		if pl.refused != "" {
			errs = append(errs, fmt.Errorf("sandbox.read_only %s is refused: %s", p, pl.refused))
			continue
		}
		binds = append(binds, pl.binds...)
		for _, c := range pl.covers {
			if !hideSet[c] {
				hideSet[c] = true
				hide = append(hide, c)
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...) // each names sandbox.read_only
	}
	s.covers = hide // hiddenWhy reads it
	binds = outermostBinds(binds)
	if s.log != nil {
		srcs := make([]string, len(binds))
		for i, b := range binds {
			srcs[i] = b.Src
		}
		s.log.Debug("the sandbox binds back what the harness needs", "binds", srcs, "covered", hide)
	}
	return binds, hide, nil
}

// ForCommand is what a side process needs from the host that a hidden
// or untraversable directory would keep from it: what the harness needs
// (Binds: PATH, sandbox.read_only; a side process runs the same
// host's programs), and its own program's directory and the absolute
// paths among its arguments, under the same refusals (never what is or
// lies in what the sandbox hides; a directory that holds a hidden file is
// bound entry by entry, without it).
//
// Each command's answer is computed once (a side sandbox starts at every
// reset, and the resolution reads the host); it is shared, so callers
// must not change its elements (appending is fine: the slices are clipped).
func (e *View) ForCommand(command []string) ([]sandbox.Bind, []string) {
	key := strings.Join(command, "\x00")
	e.sideMu.Lock()
	a, ok := e.side[key]
	e.sideMu.Unlock()
	if ok {
		return a.binds, a.covers
	}
	binds, covers := e.forCommand(command)
	// Clipped: a caller's append copies instead of writing into the
	// answer the next caller gets.
	binds, covers = slices.Clip(binds), slices.Clip(covers)
	e.sideMu.Lock()
	if e.side == nil || len(e.side) >= maxSideAnswers {
		e.side = map[string]sideExposure{}
	}
	e.side[key] = sideExposure{binds, covers}
	e.sideMu.Unlock()
	return binds, covers
}

// forCommand computes ForCommand's answer.
func (e *View) forCommand(command []string) ([]sandbox.Bind, []string) {
	hb, hh, _ := e.Binds()
	binds := append([]sandbox.Bind(nil), hb...)
	hides := append([]string(nil), hh...)
	if len(command) == 0 {
		return binds, hides
	}
	prog := e.sideProgram(command[0])
	have := map[string]bool{}
	for _, b := range binds {
		have[b.Src] = true
	}
	covered := coveredPaths()
	var dirs []string
	for _, x := range commandPaths(prog, command[1:], "", "") {
		dirs = append(dirs, x.path)
	}
	if e.resolve {
		// What the command executes, as for the harness: a version
		// manager's shim (pyenv's python3 under HOME) needs its libexec
		// and the selected version; an interpreter's script, its
		// interpreter.
		res := execpath.Resolve(execpath.Request{Command: command, Env: e.HarnessEnviron()})
		if res.Program != "" {
			dirs = append(dirs, filepath.Dir(res.Program))
		}
		for _, n := range res.Needs {
			dirs = append(dirs, n.Path)
		}
	}
	for _, d := range dirs {
		d = exposeRoot(filepath.Clean(d))
		if have[d] {
			continue
		}
		have[d] = true
		fi, err := os.Stat(d)
		if err != nil {
			continue
		}
		// As the harness's own directories are placed (computeExposures):
		// a private directory or one holding a hidden file is bound entry
		// by entry under a cover.
		pl := e.place(d, fi, covered, false)
		binds = append(binds, pl.binds...)
		for _, c := range pl.covers {
			if !slices.Contains(hides, c) {
				hides = append(hides, c)
			}
		}
	}
	return outermostBinds(binds), hides
}

// commandPaths are the host directories a command needs: its program's
// and those of the absolute paths among its arguments (a script run by an
// interpreter: node /…/cli.js), with their siblings, and where one is a
// link, its target's too. progWhy and argWhy say why, for the log.
func commandPaths(prog string, args []string, progWhy, argWhy string) []exposure {
	var out []exposure
	for i, a := range append([]string{prog}, args...) {
		if !filepath.IsAbs(a) {
			continue
		}
		fi, err := os.Stat(a)
		if err != nil {
			continue
		}
		why := progWhy
		if i > 0 {
			why = argWhy
		}
		dir := a
		if !fi.IsDir() {
			dir = filepath.Dir(a)
		}
		out = append(out, exposure{path: dir, why: why})
		if real, err := filepath.EvalSymlinks(a); err == nil && real != a {
			out = append(out, exposure{path: filepath.Dir(real), why: why + " (its link's target)"})
		}
	}
	return out
}

// placement is how a host path a sandbox needs reaches it past what the
// sandbox hides: binds (the path whole, or its entries one by one), and
// covers (directories the sandbox covers so that the binds have a way in:
// an ancestor its ids may not search, the path itself when bound entry by
// entry). No binds: the path is visible as on the host, or never bound.
type placement struct {
	binds  []sandbox.Bind
	covers []string
	// refused says why a path the operator asked for by name is never
	// bound (then binds and covers are empty).
	refused string
}

// place decides how p (clean; a directory widened by exposeRoot, fi its
// status) reaches a sandbox that hides covered and the secret paths. It is
// the one rule for the harness's directories and for side commands':
//   - a path that is, lies in or holds a hidden path (itself or, for a
//     link, its target) is never bound whole: a directory that only holds
//     one is bound entry by entry without it (expand); anything else is
//     left out, or, when asked (sandbox.read_only), refused;
//   - a path under a covered directory, or below an ancestor the
//     sandbox's ids may not search (covered in turn), is bound back;
//     a private directory (no o+x) is bound entry by entry under a cover,
//     so its entries keep their modes and the directory's own stays out;
//   - anything else is visible as on the host and needs nothing, unless
//     asked.
func (s *View) place(p string, fi os.FileInfo, covered []string, asked bool) placement {
	var out placement
	// A bind follows a link at its source: what the link names must pass
	// too.
	why := s.refusal(p)
	if real, err := filepath.EvalSymlinks(p); err == nil && real != p && why == "" {
		if r := s.refusal(real); r != "" {
			why = "it is a link to " + real + ": " + r
		}
	}
	split := false
	if why != "" {
		if asked {
			out.refused = why
			return out
		}
		// A PATH entry that is the daemon's HOME: never bound, the bind
		// would show what the hiding covers. A directory that only holds
		// a hidden file (a program beside the configuration file that
		// names it) is bound entry by entry, without it.
		if _, sp := s.entryPolicy(p); !sp || !fi.IsDir() {
			return out
		}
		split = true
	}
	under := false
	for _, c := range covered {
		if Within(p, filepath.Clean(c)) {
			under = true
		}
	}
	if a := untraversable(filepath.Dir(p)); a != "" {
		under = true
		out.covers = append(out.covers, a)
	}
	private := fi.IsDir() && fi.Mode().Perm()&0o001 == 0
	switch {
	case !under && !private && !asked:
		// Visible inside as on the host (what it holds hidden is covered).
	case private || split:
		if !under {
			out.covers = append(out.covers, p)
		}
		out.binds = s.expand(p)
	default:
		out.binds = []sandbox.Bind{{Src: p}}
	}
	return out
}

// sideProgram is a side command's program as the host finds it: a bare
// name looked up in the harness's PATH.
func (e *View) sideProgram(prog string) string {
	if strings.Contains(prog, "/") {
		return prog
	}
	path, _ := environ.Lookup(e.HarnessEnviron(), "PATH")
	for _, d := range filepath.SplitList(path) {
		if fi, err := os.Stat(filepath.Join(d, prog)); err == nil && !fi.IsDir() {
			return filepath.Join(d, prog)
		}
	}
	return prog
}

// entryPolicy says how a directory entry is bound by expand: skip it (it
// is or lies inside a hidden path, or holds the daemon's HOME or TMPDIR),
// split it (it holds a hidden path, which the split leaves out), or bind
// it whole (neither).
func (s *View) entryPolicy(p string) (skip, split bool) {
	for _, c := range coveredPaths() {
		if Within(filepath.Clean(c), p) {
			return true, false
		}
	}
	for _, h := range s.secretPaths() {
		h = filepath.Clean(h)
		if Within(p, h) {
			return true, false
		}
		if Within(h, p) {
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
//
// A bind follows its source's links on the host, where the directory bound
// whole would have its links followed inside the sandbox: so a link is
// bound only when it leads inside dir, to an entry that passes on its own
// (a link to /, to the daemon's HOME or to the hidden file is left out),
// and a hard link to a hidden file is left out too.
func (s *View) expand(dir string) []sandbox.Bind {
	top := dir
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		top = real
	}
	return s.expandIn(dir, top, 0)
}

// expandIn is expand's walk of dir, depth levels below the directory top
// (as resolved) that the expansion started from.
func (s *View) expandIn(dir, top string, depth int) []sandbox.Bind {
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
		skip, split := s.entryPolicy(p)
		if real, err := filepath.EvalSymlinks(p); err != nil {
			skip = true
		} else if real != p {
			if rs, rsplit := s.entryPolicy(real); rs || rsplit || real == top || !Within(real, top) {
				skip = true // a link to what is, or holds, what the sandbox hides, or out of dir
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
			out = append(out, s.expandIn(p, top, depth+1)...)
			continue
		}
		if fi.Mode().IsRegular() && s.isSecretFile(fi) {
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
		if n := len(out); n > 0 && Within(b.Src, out[n-1].Src) {
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

// Sources lists what a sandbox of this environment binds back read-only
// for the harness to run (sources of the binds, sorted) and the
// untraversable directories it covers so that those binds have a way in:
// what `harnessd check -- CMD` reports the harness needed.
func (s *View) Sources() (binds, covers []string, err error) {
	b, c, err := s.Binds()
	for _, x := range b {
		binds = append(binds, x.Src)
	}
	sort.Strings(binds)
	covers = append(covers, c...)
	sort.Strings(covers)
	return binds, covers, err
}
