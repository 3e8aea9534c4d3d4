// Package execpath resolves what a command needs from the file system to
// execute: the program found through PATH, its chain of symbolic links, its
// "#!" interpreters (env NAME and env -S looked up in the command's own
// PATH), and what the common version managers' shims go on to run (pyenv,
// rbenv, nodenv, asdf, nvm's nvm-exec) with the versions they select, a
// venv's base interpreter, a conda environment, a Python user site, a
// Homebrew prefix. It returns the paths to make visible, read-only, to a
// sandboxed copy of the command.
//
// It owns the resolution only: it reads the file system through FS and
// never decides what may be exposed (the caller refuses what it hides) and
// never mounts anything. Every walk is bounded (depth, count, bytes read),
// and /proc, /sys and /dev are never followed.
package execpath

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Limits of one resolution.
const (
	// MaxDepth bounds the chain of programs (a shim's interpreter's
	// interpreter…).
	MaxDepth = 8
	// MaxNeeds bounds the paths one resolution returns.
	MaxNeeds = 128
	// maxLinks bounds one chain of symbolic links.
	maxLinks = 40
	// maxHead is how much of a script is read (shebang, shim lines).
	maxHead = 16 << 10
	// maxDirUp bounds the directories searched upwards for a version file.
	maxDirUp = 32
)

// FS is the file system a resolution reads. OS reads the host's.
type FS interface {
	Lstat(name string) (fs.FileInfo, error)
	Stat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
	// ReadHead returns at most n bytes from the start of the file.
	ReadHead(name string, n int) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
}

// OS is the host's file system.
type OS struct{}

// Lstat is os.Lstat.
func (OS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// Stat is os.Stat.
func (OS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Readlink is os.Readlink.
func (OS) Readlink(name string) (string, error) { return os.Readlink(name) }

// ReadDir is os.ReadDir.
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// ReadHead reads at most n bytes of a regular file.
func (OS) ReadHead(name string, n int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(n)))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Request is one command to resolve.
type Request struct {
	// Command is the program and its arguments.
	Command []string
	// Env is the command's environment (PATH, HOME, PYENV_VERSION…).
	Env []string
	// Dir is the directory the command starts in, where version files
	// (.python-version, .tool-versions, .nvmrc) are searched upwards; ""
	// searches none.
	Dir string
	// FS is read; nil means OS.
	FS FS
}

// Need is one path the command needs: a file, or a directory with
// everything under it.
type Need struct {
	Path string `json:"path"`
	// Why says what needs it ("interpreter of /x/y", "pyenv version 3.12").
	Why string `json:"why"`
}

// Result is a resolution.
type Result struct {
	// Program is the program's absolute path ("" when PATH has none).
	Program string `json:"program,omitempty"`
	// Needs are the paths to expose, outermost first, none inside another.
	Needs []Need `json:"needs,omitempty"`
	// Missing names what was looked for and not found ("python3 in PATH").
	Missing []string `json:"missing,omitempty"`
}

// Resolve resolves req.
func Resolve(req Request) Result {
	r := &resolver{fs: req.FS, env: map[string]string{}, dir: req.Dir, seen: map[string]bool{}}
	if r.fs == nil {
		r.fs = OS{}
	}
	for _, kv := range req.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			r.env[k] = v
		}
	}
	r.home = filepath.Clean(r.env["HOME"])
	if r.home == "." || r.home == "" {
		r.home = "/"
	}
	if len(req.Command) > 0 {
		r.res.Program = r.run(req.Command[0], 0, "the program")
	}
	r.res.Needs = outermost(r.needs)
	return r.res
}

type resolver struct {
	fs    FS
	env   map[string]string
	home  string
	dir   string
	needs []Need
	seen  map[string]bool
	res   Result
	// userSite: a script of ~/.local/bin is run; its Python needs the
	// user site (~/.local/lib/pythonN).
	userSite bool
}

// off reports whether p is never followed (kernel file systems).
func off(p string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func (r *resolver) need(p, why string) {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) || p == "/" || off(p) || len(r.needs) >= MaxNeeds {
		return
	}
	if _, err := r.fs.Lstat(p); err != nil {
		return
	}
	for _, n := range r.needs {
		if n.Path == p {
			return
		}
	}
	r.needs = append(r.needs, Need{Path: p, Why: why})
}

func (r *resolver) missing(s string) {
	for _, m := range r.res.Missing {
		if m == s {
			return
		}
	}
	r.res.Missing = append(r.res.Missing, s)
}

// isExec reports whether p is a regular file with an execute bit.
func (r *resolver) isExec(p string) bool {
	fi, err := r.fs.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func (r *resolver) isDir(p string) bool {
	fi, err := r.fs.Stat(p)
	return err == nil && fi.IsDir()
}

func (r *resolver) exists(p string) bool {
	_, err := r.fs.Stat(p)
	return err == nil
}

// lookPath finds name in PATH (skipping the directories of skip).
func (r *resolver) lookPath(name string, skip ...string) string {
	if strings.Contains(name, "/") {
		if filepath.IsAbs(name) {
			return filepath.Clean(name)
		}
		if r.dir != "" {
			return filepath.Join(r.dir, name)
		}
		return ""
	}
	for _, d := range filepath.SplitList(r.env["PATH"]) {
		if !filepath.IsAbs(d) || off(d) {
			continue
		}
		skipped := false
		for _, s := range skip {
			if filepath.Clean(d) == filepath.Clean(s) {
				skipped = true
			}
		}
		if skipped {
			continue
		}
		if p := filepath.Join(d, name); r.isExec(p) {
			return p
		}
	}
	return ""
}

// chain records p's symbolic links (each link and its target) and returns
// the final path.
func (r *resolver) chain(p, why string) string {
	cur := filepath.Clean(p)
	for i := 0; i < maxLinks; i++ {
		if off(cur) {
			return cur
		}
		// A link in a directory along the way counts too: resolve the
		// parent first.
		if dir := filepath.Dir(cur); dir != cur {
			if real, links, err := evalDir(r.fs, dir); err == nil && real != dir {
				for _, l := range links {
					r.need(l, why)
				}
				r.need(cur, why)
				cur = filepath.Join(real, filepath.Base(cur))
				continue
			}
		}
		fi, err := r.fs.Lstat(cur)
		if err != nil {
			return cur
		}
		r.need(cur, why)
		if fi.Mode()&fs.ModeSymlink == 0 {
			return cur
		}
		t, err := r.fs.Readlink(cur)
		if err != nil {
			return cur
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(cur), t)
		}
		cur = filepath.Clean(t)
	}
	return cur
}

// evalDir resolves the symbolic links of a directory path; it returns
// the links it went through too.
func evalDir(fsys FS, dir string) (string, []string, error) {
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	cur := "/"
	var through []string
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		if c == "" || c == "." {
			continue
		}
		next := path.Join(cur, c)
		fi, err := fsys.Lstat(next)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if through = append(through, next); len(through) > maxLinks {
			return "", nil, errors.New("too many links")
		}
		t, err := fsys.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		if path.IsAbs(t) {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(t, "/"), "/"), parts...)
	}
	return cur, through, nil
}

// run resolves one program (a name looked up in PATH, or a path) and
// everything it goes on to execute; it returns the program's path.
func (r *resolver) run(prog string, depth int, why string) string {
	if depth > MaxDepth {
		return ""
	}
	p := r.lookPath(prog)
	if p == "" || !r.exists(p) {
		r.missing(prog + " in PATH")
		return ""
	}
	if r.seen[p] {
		return p
	}
	r.seen[p] = true
	real := r.chain(p, why)
	r.managers(p, real, depth)
	r.prefixes(real)
	if head, err := r.fs.ReadHead(real, maxHead); err == nil {
		r.shebang(real, head, depth)
	}
	return p
}

// shebang follows a script's "#!" line.
func (r *resolver) shebang(script string, head []byte, depth int) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return
	}
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return
	}
	why := "interpreter of " + script
	interp := fields[0]
	r.run(interp, depth+1, why)
	if filepath.Base(interp) != "env" {
		return
	}
	// Linux passes everything after the interpreter as one argument;
	// env -S splits it.
	args := fields[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-S" || a == "--split-string":
			continue
		case strings.HasPrefix(a, "-S"):
			args = append([]string{strings.TrimPrefix(a, "-S")}, args[i+1:]...)
			i = -1
			continue
		case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
			i++
			continue
		case a == "--":
			continue
		case strings.HasPrefix(a, "-"):
			continue
		case strings.Contains(a, "="):
			continue
		}
		r.run(a, depth+1, why+" (env "+a+")")
		return
	}
}

// managers recognises a version manager's shim (or nvm-exec) at p.
func (r *resolver) managers(p, real string, depth int) {
	dir := filepath.Dir(p)
	name := filepath.Base(p)
	if filepath.Base(dir) == "shims" {
		root := filepath.Dir(dir)
		for _, m := range envManagers {
			if r.isExec(filepath.Join(root, "libexec", m.name)) {
				r.envManager(m, root, name, p, depth)
				return
			}
		}
		if head, err := r.fs.ReadHead(real, maxHead); err == nil && bytes.Contains(head, []byte("# asdf-plugin:")) {
			r.asdf(root, name, head, depth)
			return
		}
	}
	if name == "nvm-exec" && r.exists(filepath.Join(dir, "nvm.sh")) {
		r.nvmExec(dir)
	}
}

// envManager is one of the pyenv family: shims that exec
// ROOT/libexec/NAME exec PROGRAM, which runs ROOT/versions/V/bin/PROGRAM of
// the selected version V.
type envManager struct {
	name, versionEnv, versionFile, rootEnv string
}

var envManagers = []envManager{
	{"pyenv", "PYENV_VERSION", ".python-version", "PYENV_ROOT"},
	{"rbenv", "RBENV_VERSION", ".ruby-version", "RBENV_ROOT"},
	{"nodenv", "NODENV_VERSION", ".node-version", "NODENV_ROOT"},
}

func (r *resolver) envManager(m envManager, root, prog, shim string, depth int) {
	why := m.name + " (shim " + shim + ")"
	// The shim's own export of the root wins (it is what runs).
	if head, err := r.fs.ReadHead(shim, maxHead); err == nil {
		if v := shellAssign(head, m.rootEnv); filepath.IsAbs(v) {
			root = filepath.Clean(v)
		}
	}
	r.run(filepath.Join(root, "libexec", m.name), depth+1, why)
	for _, d := range []string{"libexec", "bin", "shims", m.name + ".d", "plugins", "version"} {
		r.need(filepath.Join(root, d), why)
	}
	var versions []string
	switch v, ok := r.env[m.versionEnv]; {
	case ok && strings.TrimSpace(v) != "":
		versions = strings.FieldsFunc(v, func(c rune) bool { return c == ':' || c == ' ' })
	default:
		f := r.findUp(m.versionFile)
		if f == "" {
			f = filepath.Join(root, "version")
		} else {
			r.need(f, why+": version file")
		}
		versions = r.versionLines(f)
	}
	if len(versions) == 0 {
		versions = []string{"system"}
	}
	for _, v := range versions {
		if v == "system" {
			if p := r.lookPath(prog, filepath.Join(root, "shims")); p != "" {
				r.run(p, depth+1, why+": system "+prog)
			}
			continue
		}
		for _, vd := range r.versionDirs(filepath.Join(root, "versions"), v, "") {
			r.need(r.chain(vd, why+": version "+v), why+": version "+v)
			if bin := filepath.Join(vd, "bin", prog); r.exists(bin) {
				r.run(bin, depth+1, why+": version "+v)
			}
		}
	}
}

// versionDirs returns dir/v, or when there is none the versions whose name
// begins with prefix+v+"." (pyenv's "3.12" picks a 3.12.x); bounded.
func (r *resolver) versionDirs(dir, v, prefix string) []string {
	if v == "" || strings.Contains(v, "/") && !strings.HasPrefix(v, "lts/") || v == ".." || v == "." {
		return nil
	}
	if p := filepath.Join(dir, prefix+v); r.isDir(p) {
		return []string{p}
	}
	ents, err := r.fs.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+v+".") && len(out) < 8 {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// findUp searches name in the start directory and its parents, then in
// HOME.
func (r *resolver) findUp(name string) string {
	if r.dir != "" {
		d := filepath.Clean(r.dir)
		for i := 0; i < maxDirUp; i++ {
			if p := filepath.Join(d, name); r.exists(p) {
				return p
			}
			if d == "/" {
				break
			}
			d = filepath.Dir(d)
		}
	}
	if r.home != "/" {
		if p := filepath.Join(r.home, name); r.exists(p) {
			return p
		}
	}
	return ""
}

// versionLines reads a version file: one or more versions, # comments.
func (r *resolver) versionLines(f string) []string {
	b, err := r.fs.ReadHead(f, maxHead)
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		out = append(out, strings.Fields(line)...)
	}
	return out
}

// shellAssign finds NAME="value" (or export NAME=value) in a shell script.
func shellAssign(script []byte, name string) string {
	for _, line := range strings.Split(string(script), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// asdf: shims carry "# asdf-plugin: PLUGIN VERSION" lines and exec the
// asdf command ("asdf exec PROGRAM"), which runs
// DATA/installs/PLUGIN/VERSION/bin/PROGRAM of the version .tool-versions
// (or ASDF_PLUGIN_VERSION) selects.
func (r *resolver) asdf(data, prog string, shim []byte, depth int) {
	why := "asdf (shim " + filepath.Join(data, "shims", prog) + ")"
	if d := r.env["ASDF_DATA_DIR"]; filepath.IsAbs(d) {
		data = filepath.Clean(d)
	}
	r.need(filepath.Join(data, "shims"), why)
	plugins := map[string][]string{}
	var order []string
	for _, line := range strings.Split(string(shim), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# asdf-plugin:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if _, ok := plugins[f[0]]; !ok {
			order = append(order, f[0])
		}
		plugins[f[0]] = append(plugins[f[0]], f[1:]...)
		if exe := execTarget(line); exe != "" {
			r.run(exe, depth+1, why)
		}
	}
	// The asdf command the shim execs: a path, or asdf in PATH.
	for _, line := range strings.Split(string(shim), "\n") {
		if exe := execTarget(line); exe != "" {
			if p := r.run(exe, depth+1, why); p != "" {
				r.asdfCode(p, why)
			}
		}
	}
	cfg := r.env["ASDF_CONFIG_FILE"]
	if cfg == "" {
		cfg = filepath.Join(r.home, ".asdfrc")
	}
	r.need(cfg, why+": configuration")
	toolVersions := r.env["ASDF_DEFAULT_TOOL_VERSIONS_FILENAME"]
	if toolVersions == "" {
		toolVersions = ".tool-versions"
	}
	tv := r.findUp(toolVersions)
	if tv != "" {
		r.need(tv, why+": "+toolVersions)
	}
	selected := map[string][]string{}
	for _, line := range r.rawLines(tv) {
		f := strings.Fields(line)
		if len(f) > 1 {
			selected[f[0]] = f[1:]
		}
	}
	for _, plugin := range order {
		r.need(filepath.Join(data, "plugins", plugin), why+": plugin "+plugin)
		vs := selected[plugin]
		if v := r.env["ASDF_"+strings.ToUpper(strings.ReplaceAll(plugin, "-", "_"))+"_VERSION"]; v != "" {
			vs = []string{v}
		}
		if len(vs) == 0 {
			vs = plugins[plugin]
		}
		for _, v := range vs {
			if v == "system" {
				if p := r.lookPath(prog, filepath.Join(data, "shims")); p != "" {
					r.run(p, depth+1, why+": system "+prog)
				}
				continue
			}
			for _, vd := range r.versionDirs(filepath.Join(data, "installs", plugin), v, "") {
				r.need(vd, why+": "+plugin+" "+v)
				r.prefixes(filepath.Join(vd, "bin", prog))
			}
		}
	}
}

// asdfCode exposes the code of a shell asdf (ASDF_DIR/bin/asdf sources
// ASDF_DIR/lib); a single-binary asdf needs only itself.
func (r *resolver) asdfCode(p, why string) {
	real := r.chain(p, why)
	root := filepath.Dir(filepath.Dir(real))
	if filepath.Base(filepath.Dir(real)) == "bin" && r.isDir(filepath.Join(root, "lib")) {
		for _, d := range []string{"bin", "lib", "libexec", "asdf.sh", "defaults", "VERSION"} {
			r.need(filepath.Join(root, d), why+": asdf's code")
		}
	}
}

func (r *resolver) rawLines(f string) []string {
	if f == "" {
		return nil
	}
	b, err := r.fs.ReadHead(f, maxHead)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// execTarget returns the program of a shell "exec PROG …" line.
func execTarget(line string) string {
	line = strings.TrimSpace(line)
	rest, ok := strings.CutPrefix(line, "exec ")
	if !ok {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return ""
	}
	t := strings.Trim(f[0], `"'`)
	if strings.ContainsAny(t, "$`") {
		return ""
	}
	return t
}

// nvmExec: NVM_DIR/nvm-exec sources nvm.sh and runs "nvm exec" with
// NODE_VERSION, else .nvmrc, else the default alias.
func (r *resolver) nvmExec(nvmDir string) {
	why := "nvm (" + filepath.Join(nvmDir, "nvm-exec") + ")"
	for _, f := range []string{"nvm.sh", "nvm-exec", "alias", "bash_completion"} {
		r.need(filepath.Join(nvmDir, f), why)
	}
	v := r.env["NODE_VERSION"]
	if v == "" {
		if f := r.findUp(".nvmrc"); f != "" {
			r.need(f, why+": .nvmrc")
			if l := r.rawLines(f); len(l) > 0 {
				v = l[0]
			}
		}
	}
	if v == "" {
		v = "default"
	}
	// Aliases name aliases (default -> lts/* -> lts/iron -> v20.11.0).
	for i := 0; i < 8; i++ {
		a := filepath.Join(nvmDir, "alias", v)
		if strings.Contains(v, "..") || !r.exists(a) {
			break
		}
		l := r.rawLines(a)
		if len(l) == 0 {
			break
		}
		v = l[0]
	}
	versions := filepath.Join(nvmDir, "versions", "node")
	if v == "node" || v == "stable" {
		ents, _ := r.fs.ReadDir(versions)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		if len(names) > 0 {
			v = names[len(names)-1]
		}
	}
	v = strings.TrimPrefix(v, "v")
	for _, vd := range r.versionDirs(versions, v, "v") {
		r.need(vd, why+": node "+filepath.Base(vd))
	}
}

// prefixes recognises where an executable lives: a venv (its base
// interpreter from pyvenv.cfg), a conda environment, a version manager's
// installed version, a uv-managed Python, a Homebrew prefix, a Python
// user site; each whole prefix is needed.
func (r *resolver) prefixes(real string) {
	bin := filepath.Dir(real)
	prefix := filepath.Dir(bin)
	// A venv: PREFIX/pyvenv.cfg, home = the base's bin directory.
	if cfg := filepath.Join(prefix, "pyvenv.cfg"); r.exists(cfg) {
		why := "venv " + prefix
		r.need(prefix, why)
		for _, line := range r.rawLines(cfg) {
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "home", "executable", "base-executable":
				v = strings.TrimSpace(v)
				if !filepath.IsAbs(v) {
					continue
				}
				if r.isDir(v) {
					base := filepath.Dir(v)
					if filepath.Base(v) != "bin" {
						base = v
					}
					if base != r.home && base != filepath.Join(r.home, ".local") {
						r.need(base, why+": base interpreter ("+k+")")
					}
					if exe := filepath.Join(v, filepath.Base(real)); r.exists(exe) {
						r.prefixes(r.chain(exe, why+": base interpreter"))
					}
				} else if r.exists(v) {
					r.prefixes(r.chain(v, why+": base interpreter"))
				}
			}
		}
	}
	// A conda environment: conda-meta beside bin.
	for d, i := bin, 0; i < 3 && d != "/"; d, i = filepath.Dir(d), i+1 {
		if r.isDir(filepath.Join(d, "conda-meta")) {
			r.need(d, "conda environment "+d)
			break
		}
	}
	// ROOT/versions/V/… of the pyenv family, asdf's installs/P/V, nvm's
	// versions/node/V, uv's python/V.
	parts := strings.Split(real, "/")
	for i := 1; i+1 < len(parts); i++ {
		switch parts[i] {
		case "versions":
			root := strings.Join(parts[:i], "/")
			if i+2 < len(parts) && parts[i+1] == "node" && r.exists(filepath.Join(root, "nvm.sh")) {
				r.need(strings.Join(parts[:i+3], "/"), "nvm's node "+parts[i+2])
				return
			}
			for _, m := range envManagers {
				if r.exists(filepath.Join(root, "libexec", m.name)) {
					r.need(strings.Join(parts[:i+2], "/"), m.name+" version "+parts[i+1])
					return
				}
			}
		case "installs":
			root := strings.Join(parts[:i], "/")
			if i+3 < len(parts) && r.isDir(filepath.Join(root, "shims")) && r.isDir(filepath.Join(root, "plugins")) {
				r.need(strings.Join(parts[:i+3], "/"), "asdf install "+parts[i+1]+" "+parts[i+2])
				return
			}
		case "python":
			if i > 0 && parts[i-1] == "uv" && i+2 < len(parts) {
				r.need(strings.Join(parts[:i+2], "/"), "uv-managed Python "+parts[i+1])
				return
			}
		}
	}
	// Homebrew: a prefix with Cellar and bin/brew.
	for d, i := bin, 0; i < 6 && d != "/"; d, i = filepath.Dir(d), i+1 {
		if r.isDir(filepath.Join(d, "Cellar")) && r.exists(filepath.Join(d, "bin", "brew")) {
			r.need(d, "Homebrew prefix "+d)
			return
		}
	}
	// A Python prefix (PREFIX/lib/python3.N/os.py), not HOME's own.
	if filepath.Base(bin) == "bin" && prefix != r.home && prefix != filepath.Join(r.home, ".local") && !system[prefix] && strings.Count(prefix, "/") > 1 {
		ents, _ := r.fs.ReadDir(filepath.Join(prefix, "lib"))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "python3") && r.exists(filepath.Join(prefix, "lib", e.Name(), "os.py")) {
				r.need(prefix, "Python prefix "+prefix)
				break
			}
		}
	}
	// A script in ~/.local/bin run by Python: its user site.
	if filepath.Dir(real) == filepath.Join(r.home, ".local", "bin") {
		r.userSite = true
	}
	if r.userSite && strings.HasPrefix(filepath.Base(real), "python") {
		ents, _ := r.fs.ReadDir(filepath.Join(r.home, ".local", "lib"))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "python") && e.IsDir() {
				r.need(filepath.Join(r.home, ".local", "lib", e.Name()), "Python user site of "+real)
			}
		}
	}
}

// system prefixes are never returned as a whole.
var system = map[string]bool{"/usr": true, "/usr/local": true}

// outermost drops needs inside another need, sorted by path.
func outermost(needs []Need) []Need {
	sort.Slice(needs, func(i, j int) bool { return needs[i].Path < needs[j].Path })
	var out []Need
	for _, n := range needs {
		if len(out) > 0 {
			last := out[len(out)-1].Path
			if n.Path == last || strings.HasPrefix(n.Path, last+"/") {
				continue
			}
		}
		out = append(out, n)
	}
	return out
}
