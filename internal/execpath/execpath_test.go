package execpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/execpath"
	"github.com/harnessd/harnessd/internal/execpath/fixture"
	"github.com/harnessd/harnessd/internal/testbin"
)

// privateHome is a 0700 HOME in a fresh directory.
func privateHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return home
}

// exe is any real executable to stand at the end of the chains.
func exe(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testbin.Missing(t, "no true(1) to copy")
	return ""
}

func paths(r execpath.Result) []string {
	var out []string
	for _, n := range r.Needs {
		out = append(out, n.Path)
	}
	return out
}

// check: every path the layout needs is returned (or a directory holding
// it), nothing it must not expose is, and never HOME or above.
func check(t *testing.T, l *fixture.Layout, r execpath.Result) {
	t.Helper()
	got := paths(r)
	for _, n := range l.Needs {
		if !fixture.Covered(n, got) {
			t.Errorf("%s is needed and not returned; got:\n  %s\nmissing %v", n, strings.Join(got, "\n  "), r.Missing)
		}
	}
	for _, n := range l.NotNeeded {
		if fixture.Covered(n, got) {
			t.Errorf("%s is returned (not needed); got:\n  %s", n, strings.Join(got, "\n  "))
		}
	}
	for _, g := range got {
		if g == l.Home || strings.HasPrefix(l.Home, g+"/") {
			t.Errorf("HOME or an ancestor %s returned", g)
		}
	}
}

func resolve(l *fixture.Layout, dir string) execpath.Result {
	return execpath.Resolve(execpath.Request{Command: l.Command, Env: l.Environ(), Dir: dir})
}

func TestPyenvShimResolvesToTheSelectedVersion(t *testing.T) {
	home := privateHome(t)
	l, err := fixture.Pyenv(home, exe(t), "")
	if err != nil {
		t.Fatal(err)
	}
	check(t, l, resolve(l, ""))
	root := filepath.Join(home, ".pyenv")
	got := paths(resolve(l, ""))
	for _, want := range []string{filepath.Join(root, "libexec"), filepath.Join(root, "shims"), filepath.Join(root, "versions", "3.12.1")} {
		if !fixture.Covered(want, got) {
			t.Errorf("%s not returned: %v", want, got)
		}
	}
	if fixture.Covered(root, got) {
		t.Errorf("the whole pyenv root (its cache, its git clone) is returned")
	}

	// PYENV_VERSION wins; then .python-version upwards from the start
	// directory.
	l.Env = map[string]string{"PYENV_VERSION": "3.11.7"}
	if got := paths(resolve(l, "")); !fixture.Covered(filepath.Join(root, "versions", "3.11.7"), got) || fixture.Covered(filepath.Join(root, "versions", "3.12.1", "bin"), got) {
		t.Errorf("PYENV_VERSION=3.11.7: %v", got)
	}
	l.Env = nil
	work := filepath.Join(t.TempDir(), "proj", "sub")
	os.MkdirAll(work, 0o755)
	os.WriteFile(filepath.Join(filepath.Dir(work), ".python-version"), []byte("3.11\n"), 0o644)
	got = paths(resolve(l, work))
	if !fixture.Covered(filepath.Join(root, "versions", "3.11.7"), got) || !fixture.Covered(filepath.Join(filepath.Dir(work), ".python-version"), got) {
		t.Errorf(".python-version 3.11 (a prefix) above the start directory: %v", got)
	}
}

func TestAsdfShimResolvesToTheToolVersionsVersion(t *testing.T) {
	home := privateHome(t)
	l, err := fixture.Asdf(home, exe(t))
	if err != nil {
		t.Fatal(err)
	}
	check(t, l, resolve(l, ""))
}

func TestNvmExecResolvesTheDefaultAlias(t *testing.T) {
	home := privateHome(t)
	l, err := fixture.Nvm(home, exe(t))
	if err != nil {
		t.Fatal(err)
	}
	check(t, l, resolve(l, ""))
	// NODE_VERSION picks another.
	l.Env["NODE_VERSION"] = "18"
	if got := paths(resolve(l, "")); !fixture.Covered(filepath.Join(home, ".nvm", "versions", "node", "v18.19.0"), got) {
		t.Errorf("NODE_VERSION=18: %v", got)
	}
}

func TestVenvResolvesItsBaseInterpreter(t *testing.T) {
	home := privateHome(t)
	l, err := fixture.Venv(home, exe(t))
	if err != nil {
		t.Fatal(err)
	}
	check(t, l, resolve(l, ""))
}

func TestCondaEnvironmentIsExposedNotTheInstallation(t *testing.T) {
	home := privateHome(t)
	l, err := fixture.Conda(home, exe(t))
	if err != nil {
		t.Fatal(err)
	}
	check(t, l, resolve(l, ""))
}

func TestLocalBinScriptBringsItsInterpreterAndUserSite(t *testing.T) {
	home := privateHome(t)
	l, err := fixture.LocalBin(home, exe(t))
	if err != nil {
		t.Fatal(err)
	}
	check(t, l, resolve(l, ""))
}

func TestHomebrewPrefix(t *testing.T) {
	home := privateHome(t)
	prefix := filepath.Join(t.TempDir(), "linuxbrew", ".linuxbrew")
	l, err := fixture.Homebrew(prefix, home, exe(t))
	if err != nil {
		t.Fatal(err)
	}
	r := resolve(l, "")
	check(t, l, r)
	if !fixture.Covered(filepath.Join(prefix, "opt"), paths(r)) {
		t.Errorf("the Homebrew prefix (opt/, lib/ its kegs link to) is not returned: %v", paths(r))
	}
}

func TestEnvShebangsUseTheCommandsPATH(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tools", "bin")
	os.MkdirAll(bin, 0o755)
	interp := filepath.Join(bin, "python3")
	os.WriteFile(interp, []byte("#!/bin/sh\n"), 0o755)
	for i, line := range []string{"#!/usr/bin/env python3", "#!/usr/bin/env -S python3 -u", "#!/usr/bin/env -S PYTHONUNBUFFERED=1 python3 -u", "#!/usr/bin/env -i A=1 python3"} {
		script := filepath.Join(dir, "script", string(rune('a'+i)))
		os.MkdirAll(filepath.Dir(script), 0o755)
		os.WriteFile(script, []byte(line+"\nprint(1)\n"), 0o755)
		r := execpath.Resolve(execpath.Request{Command: []string{script}, Env: []string{"PATH=" + bin + ":/usr/bin:/bin"}})
		if !fixture.Covered(interp, paths(r)) {
			t.Errorf("%q: %s not returned: %v (missing %v)", line, interp, paths(r), r.Missing)
		}
	}
}

func TestSymlinkChainsAndBounds(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "opt", "tool-1.2", "bin", "tool")
	os.MkdirAll(filepath.Dir(real), 0o755)
	os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(dir, "bin", "tool")
	os.MkdirAll(filepath.Dir(link), 0o755)
	os.Symlink("../opt/current/bin/tool", link)
	os.Symlink("tool-1.2", filepath.Join(dir, "opt", "current"))
	r := execpath.Resolve(execpath.Request{Command: []string{"tool"}, Env: []string{"PATH=" + filepath.Join(dir, "bin")}})
	got := paths(r)
	for _, want := range []string{link, filepath.Join(dir, "opt", "current"), real} {
		if !fixture.Covered(want, got) {
			t.Errorf("%s not in the chain: %v", want, got)
		}
	}
	// A loop of links and a script that is its own interpreter end.
	os.Symlink("loop-b", filepath.Join(dir, "bin", "loop-a"))
	os.Symlink("loop-a", filepath.Join(dir, "bin", "loop-b"))
	self := filepath.Join(dir, "bin", "self")
	os.WriteFile(self, []byte("#!"+self+"\n"), 0o755)
	proc := filepath.Join(dir, "bin", "proc")
	os.WriteFile(proc, []byte("#!/proc/self/exe\n"), 0o755)
	for _, c := range []string{"loop-a", "self", "proc"} {
		r := execpath.Resolve(execpath.Request{Command: []string{c}, Env: []string{"PATH=" + filepath.Join(dir, "bin")}})
		for _, p := range paths(r) {
			if strings.HasPrefix(p, "/proc") {
				t.Errorf("%s: /proc followed: %v", c, paths(r))
			}
		}
		if len(r.Needs) > execpath.MaxNeeds {
			t.Errorf("%s: %d needs", c, len(r.Needs))
		}
	}
	// A missing program is reported, not guessed.
	if r := execpath.Resolve(execpath.Request{Command: []string{"nope"}, Env: []string{"PATH=/nonexistent"}}); r.Program != "" || len(r.Missing) != 1 {
		t.Errorf("missing program: %+v", r)
	}
}

// TestRbenvAndNodenvShareThePyenvShape: rbenv's and nodenv's shims are
// pyenv's (ROOT/shims/X execs ROOT/libexec/NAME exec X); each resolves
// to its selected version, .ruby-version / .node-version first.
func TestRbenvAndNodenvShareThePyenvShape(t *testing.T) {
	for _, m := range []struct{ name, rootEnv, file, prog string }{{"rbenv", "RBENV_ROOT", ".ruby-version", "ruby"}, {"nodenv", "NODENV_ROOT", ".node-version", "node"}} {
		home := privateHome(t)
		root := filepath.Join(home, "."+m.name)
		shim := "#!/usr/bin/env bash\nset -e\n[ -n \"$" + strings.ToUpper(m.name) + "_DEBUG\" ] && set -x\n\nprogram=\"${0##*/}\"\n\nexport " + m.rootEnv + "=\"" + root + "\"\nexec \"" + root + "/libexec/" + m.name + "\" exec \"$program\" \"$@\"\n"
		files := map[string]string{
			"shims/" + m.prog:              shim,
			"libexec/" + m.name:            "#!/usr/bin/env bash\n",
			"version":                      "1.0.0\n",
			"versions/1.0.0/bin/" + m.prog: "#!/bin/sh\n",
			"versions/2.0.0/bin/" + m.prog: "#!/bin/sh\n",
		}
		for f, text := range files {
			p := filepath.Join(root, f)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(text), 0o755)
		}
		env := []string{"PATH=" + filepath.Join(root, "shims") + ":/usr/bin:/bin", "HOME=" + home}
		got := paths(execpath.Resolve(execpath.Request{Command: []string{m.prog}, Env: env}))
		if !fixture.Covered(filepath.Join(root, "versions", "1.0.0"), got) || fixture.Covered(filepath.Join(root, "versions", "2.0.0"), got) || !fixture.Covered(filepath.Join(root, "libexec", m.name), got) {
			t.Errorf("%s global version: %v", m.name, got)
		}
		work := t.TempDir()
		os.WriteFile(filepath.Join(work, m.file), []byte("2.0.0\n"), 0o644)
		got = paths(execpath.Resolve(execpath.Request{Command: []string{m.prog}, Env: env, Dir: work}))
		if !fixture.Covered(filepath.Join(root, "versions", "2.0.0"), got) {
			t.Errorf("%s %s: %v", m.name, m.file, got)
		}
	}
}
