// Attacks on what the sandbox binds back for the harness and for side
// processes (ForCommand): links, hard links, odd names, deep and wide trees
// beside a hidden file (the daemon's configuration), each checked by leaks
// against the secrets as named and as resolved, each with a control that
// the check flags a known exposure. Written by an outside review of the
// entry-by-entry binding of a side program's directory; A5, A6, A7, A10
// exposed secrets before the fix that came with them.
package exposure

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process/sandbox"
)

// rtView: a view whose workspace root and record dir are ws and rec,
// hiding hide; the harness is cmd (default /bin/true).
func rtView(ws, rec string, hide []string, cmd ...string) *View {
	if len(cmd) == 0 {
		cmd = []string{"/bin/true"}
	}
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: cmd}}, RecordDir: rec}
	cfg.Workspace.Root = ws
	return New(cfg, hide, true, nil)
}

func rtWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func rtLink(t *testing.T, target, p string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// leaks: each bind whose source is, holds or lies in a secret, compared
// both lexically and after filepath.EvalSymlinks of either side (a bind
// follows its source's links on the host). home: a bind that holds the
// daemon's HOME, or whose source is a link resolving into HOME from
// outside it (the host's HOME subtree, which the sandbox covers, shown
// where no configuration named it).
func leaks(binds []sandbox.Bind, secrets []string, home string) []string {
	var out []string
	for _, b := range binds {
		src := filepath.Clean(b.Src)
		srcs := []string{src}
		if r, err := filepath.EvalSymlinks(src); err == nil && r != src {
			srcs = append(srcs, r)
		}
		for _, s := range secrets {
			ss := []string{filepath.Clean(s)}
			if r, err := filepath.EvalSymlinks(s); err == nil && r != ss[0] {
				ss = append(ss, r)
			}
			for _, x := range srcs {
				for _, y := range ss {
					if rtWithin(x, y) || rtWithin(y, x) {
						out = append(out, fmt.Sprintf("%s (%s) exposes %s", b.Src, x, y))
					}
				}
			}
		}
		if home != "" {
			for _, x := range srcs {
				if rtWithin(home, x) {
					out = append(out, fmt.Sprintf("%s (%s) holds HOME %s", b.Src, x, home))
				}
			}
			if len(srcs) == 2 && !rtWithin(src, home) && rtWithin(srcs[1], home) {
				out = append(out, fmt.Sprintf("%s is a link into HOME: %s", b.Src, srcs[1]))
			}
		}
	}
	return out
}

// rtWithin is Within written again for the check, so that a bug in
// Within (it once missed every path under "/") cannot hide a leak.
func rtWithin(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// control: the check flags a known-bad bind.
func control(t *testing.T, bad string, secrets []string, home string) {
	t.Helper()
	if len(leaks([]sandbox.Bind{{Src: bad}}, secrets, home)) == 0 {
		t.Fatalf("control: the check does not flag a bind of %s", bad)
	}
}

// Attack 1: entries beside the hidden file that are links to it
// (absolute, relative, via .., chains), links to its directory, to an
// ancestor, to /, and links into the workspace root and record dir,
// which the program's directory also holds (nested secrets).
func TestAdversaryLinksBesideHiddenFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	os.Mkdir(filepath.Join(tmp, "home"), 0o755)
	d := filepath.Join(tmp, "conf")
	conf := filepath.Join(d, "env.yaml")
	ws, rec := filepath.Join(d, "ws"), filepath.Join(d, "sub", "rec")
	for _, f := range []string{"customer.py", "env.yaml", "ws/s1/file", "sub/rec/ep1/traj", "sub/ok.py"} {
		rtWrite(t, filepath.Join(d, f))
	}
	rtLink(t, conf, filepath.Join(d, "abs"))
	rtLink(t, "env.yaml", filepath.Join(d, "rel"))
	rtLink(t, "../conf/env.yaml", filepath.Join(d, "reldots"))
	rtLink(t, "c2", filepath.Join(d, "c1"))
	rtLink(t, "c3", filepath.Join(d, "c2"))
	rtLink(t, "env.yaml", filepath.Join(d, "c3"))
	rtLink(t, ".", filepath.Join(d, "self"))
	rtLink(t, "..", filepath.Join(d, "up"))
	rtLink(t, "/", filepath.Join(d, "root"))
	rtLink(t, d, filepath.Join(d, "sub", "back"))
	rtLink(t, filepath.Join(ws, "s1"), filepath.Join(d, "wslink"))
	rtLink(t, filepath.Join(rec, "ep1", "traj"), filepath.Join(d, "sub", "reclink"))
	secrets := []string{conf, ws, rec}
	control(t, d, secrets, "")
	control(t, filepath.Join(d, "c1"), secrets, "")
	control(t, filepath.Join(d, "wslink"), secrets, "")
	binds, _ := rtView(ws, rec, []string{conf}).ForCommand([]string{filepath.Join(d, "customer.py")})
	if l := leaks(binds, secrets, ""); len(l) > 0 {
		t.Errorf("exposed: %v", l)
	}
}

// Attack 2: secrets deeper than maxExpandDepth and beyond
// maxExpandEntries (a second hidden file sorted after 600 siblings).
func TestAdversaryDeepAndWide(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	d := filepath.Join(tmp, "conf")
	conf := filepath.Join(d, "env.yaml")
	deep := filepath.Join(d, "a", "b", "c", "d", "e", "f", "g", "token")
	late := filepath.Join(d, "wide", "zzz-token")
	rtWrite(t, filepath.Join(d, "customer.py"))
	for _, f := range []string{conf, deep, late, filepath.Join(d, "a", "b", "c", "d", "e", "f", "g", "other")} {
		rtWrite(t, f)
	}
	for i := 0; i < 600; i++ {
		rtWrite(t, filepath.Join(d, "wide", fmt.Sprintf("f%03d", i)))
	}
	secrets := []string{conf, deep, late}
	control(t, filepath.Join(d, "wide"), secrets, "")
	control(t, filepath.Join(d, "a", "b", "c", "d", "e", "f", "g"), secrets, "")
	binds, _ := rtView(filepath.Join(tmp, "ws"), "", secrets).ForCommand([]string{filepath.Join(d, "customer.py")})
	if l := leaks(binds, secrets, ""); len(l) > 0 {
		t.Errorf("exposed: %v", l)
	}
}

// Attack 3: odd names: a hidden file with a newline and spaces, named
// uncleanly (./, //, trailing /), siblings whose names extend it.
func TestAdversaryOddNames(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	d := filepath.Join(tmp, "co nf")
	odd := filepath.Join(d, "we\nird .yaml")
	conf := filepath.Join(d, "env.yaml")
	for _, f := range []string{"customer.py", "env.yaml", "we\nird .yaml", "env.yaml ", "env.yaml\n", "env.yaml..", ".env.yaml", "env.yaml.d/x"} {
		rtWrite(t, filepath.Join(d, f))
	}
	rtLink(t, "we\nird .yaml", filepath.Join(d, "l\n"))
	hide := []string{d + "/./env.yaml/", strings.Replace(odd, "/", "//", -1)}
	secrets := []string{conf, odd}
	control(t, filepath.Join(d, "l\n"), secrets, "")
	binds, _ := rtView(filepath.Join(tmp, "ws"), "", hide).ForCommand([]string{filepath.Join(d, "customer.py")})
	if l := leaks(binds, secrets, ""); len(l) > 0 {
		t.Errorf("exposed: %v", l)
	}
}

// Attack 4: the program is a link into the hidden file's directory, into
// the record dir and into the workspace root.
func TestAdversaryProgramLinkIntoSecretDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	d, ws, rec := filepath.Join(tmp, "conf"), filepath.Join(tmp, "ws"), filepath.Join(tmp, "rec")
	conf := filepath.Join(d, "env.yaml")
	for _, f := range []string{filepath.Join(d, "customer.py"), conf, filepath.Join(rec, "prog"), filepath.Join(ws, "s", "prog")} {
		rtWrite(t, f)
	}
	u := filepath.Join(tmp, "u")
	rtLink(t, filepath.Join(d, "customer.py"), filepath.Join(u, "customer.py"))
	rtLink(t, filepath.Join(rec, "prog"), filepath.Join(u, "recprog"))
	rtLink(t, filepath.Join(ws, "s", "prog"), filepath.Join(u, "wsprog"))
	secrets := []string{conf, ws, rec}
	control(t, d, secrets, "")
	v := rtView(ws, rec, []string{conf})
	for _, p := range []string{"customer.py", "recprog", "wsprog"} {
		binds, _ := v.ForCommand([]string{filepath.Join(u, p), filepath.Join(u, p)})
		if l := leaks(binds, secrets, ""); len(l) > 0 {
			t.Errorf("%s: exposed: %v", p, l)
		}
	}
}

// Attack 5: the program's directory (as named) is a link to the hidden
// file's directory, to the record dir, or into the workspace root.
// Harness comparison: the same command as the harness's (computeExposures).
func TestAdversaryProgramDirIsLinkToSecretDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	d, ws, rec := filepath.Join(tmp, "conf"), filepath.Join(tmp, "ws"), filepath.Join(tmp, "rec")
	conf := filepath.Join(d, "env.yaml")
	for _, f := range []string{filepath.Join(d, "customer.py"), conf, filepath.Join(rec, "prog"), filepath.Join(ws, "s", "prog")} {
		rtWrite(t, f)
	}
	u := filepath.Join(tmp, "u")
	rtLink(t, d, filepath.Join(u, "confdir"))
	rtLink(t, rec, filepath.Join(u, "recdir"))
	rtLink(t, filepath.Join(ws, "s"), filepath.Join(u, "wsdir"))
	secrets := []string{conf, ws, rec}
	control(t, filepath.Join(u, "confdir"), secrets, "")
	for _, p := range []string{"confdir/customer.py", "recdir/prog", "wsdir/prog"} {
		cmd := filepath.Join(u, p)
		binds, _ := rtView(ws, rec, []string{conf}).ForCommand([]string{cmd})
		if l := leaks(binds, secrets, ""); len(l) > 0 {
			t.Errorf("side %s: exposed: %v", p, l)
		}
		hb, _, err := rtView(ws, rec, []string{conf}, cmd).Binds()
		if l := leaks(hb, secrets, ""); len(l) > 0 {
			t.Errorf("harness %s: exposed: %v (err %v)", p, l, err)
		}
	}
}

// Attack 6: the hidden path is named through a link (serve's daemonFiles
// is filepath.Abs, which keeps $PWD's links): the program's resolved
// directory holds the hidden file under its real name.
func TestAdversaryHiddenNamedThroughLink(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	real := filepath.Join(tmp, "R", "conf")
	for _, f := range []string{"customer.py", "env.yaml"} {
		rtWrite(t, filepath.Join(real, f))
	}
	rtLink(t, filepath.Join(tmp, "R"), filepath.Join(tmp, "L"))
	conf := filepath.Join(tmp, "L", "conf", "env.yaml") // as hidden
	cmd := filepath.Join(tmp, "L", "conf", "customer.py")
	secrets := []string{conf}
	control(t, real, secrets, "")
	binds, _ := rtView(filepath.Join(tmp, "ws"), "", []string{conf}).ForCommand([]string{cmd})
	if l := leaks(binds, secrets, ""); len(l) > 0 {
		t.Errorf("side: exposed: %v", l)
	}
	hb, _, _ := rtView(filepath.Join(tmp, "ws"), "", []string{conf}, cmd).Binds()
	if l := leaks(hb, secrets, ""); len(l) > 0 {
		t.Errorf("harness: exposed: %v", l)
	}
}

// Attack 7: an entry beside the hidden file is a link into the daemon's
// HOME (or elsewhere in the host's /tmp). Bound whole (the control
// directory without env.yaml), the link resolves inside the sandbox,
// where HOME is covered; bound as a source of its own, on the host.
func TestAdversaryEntryLinkIntoHome(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	t.Setenv("HOME", home)
	rtWrite(t, filepath.Join(home, ".aws", "credentials"))
	rtWrite(t, filepath.Join(home, ".netrc"))
	for _, name := range []string{"withconf", "plain"} {
		d := filepath.Join(tmp, name)
		rtWrite(t, filepath.Join(d, "customer.py"))
		rtLink(t, filepath.Join(home, ".aws"), filepath.Join(d, "aws"))
		rtLink(t, filepath.Join(home, ".netrc"), filepath.Join(d, "netrc"))
	}
	conf := filepath.Join(tmp, "withconf", "env.yaml")
	rtWrite(t, conf)
	secrets := []string{conf}
	control(t, filepath.Join(tmp, "withconf", "aws"), secrets, home)
	for _, name := range []string{"withconf", "plain"} {
		cmd := filepath.Join(tmp, name, "customer.py")
		binds, _ := rtView(filepath.Join(tmp, "ws"), "", []string{conf}).ForCommand([]string{cmd})
		if l := leaks(binds, secrets, home); len(l) > 0 {
			t.Errorf("side %s: exposed: %v", name, l)
		}
		hb, _, _ := rtView(filepath.Join(tmp, "ws"), "", []string{conf}, cmd).Binds()
		if l := leaks(hb, secrets, home); len(l) > 0 {
			t.Errorf("harness %s: exposed: %v", name, l)
		}
	}
}

// Attack 8: the program's directory is, holds, or lies in the daemon's
// HOME and holds the hidden file; links in it to HOME and to its parent.
func TestAdversaryHomeCases(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "x", "home")
	t.Setenv("HOME", home)
	rtWrite(t, filepath.Join(home, ".ssh", "id"))
	c1 := filepath.Join(home, "env.yaml")         // program in HOME itself
	c2 := filepath.Join(home, "proj", "env.yaml") // program in HOME/proj
	c3 := filepath.Join(tmp, "x", "env.yaml")     // program in HOME's parent
	for _, f := range []string{c1, c2, c3, filepath.Join(home, "customer.py"), filepath.Join(home, "proj", "customer.py"), filepath.Join(tmp, "x", "customer.py")} {
		rtWrite(t, f)
	}
	rtLink(t, home, filepath.Join(home, "proj", "h"))
	rtLink(t, "..", filepath.Join(home, "proj", "up"))
	secrets := []string{c1, c2, c3}
	control(t, filepath.Join(home, "proj", "up"), secrets, home)
	control(t, filepath.Join(tmp, "x"), secrets, home)
	v := rtView(filepath.Join(tmp, "ws"), "", secrets)
	for _, cmd := range []string{filepath.Join(home, "customer.py"), filepath.Join(home, "proj", "customer.py"), filepath.Join(tmp, "x", "customer.py")} {
		binds, _ := v.ForCommand([]string{cmd})
		if l := leaks(binds, secrets, home); len(l) > 0 {
			t.Errorf("%s: exposed: %v", cmd, l)
		}
	}
}

// Attack 9: a hard link to the hidden file beside it.
func TestAdversaryHardLink(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	d := filepath.Join(tmp, "conf")
	conf := filepath.Join(d, "env.yaml")
	rtWrite(t, conf)
	rtWrite(t, filepath.Join(d, "customer.py"))
	if err := os.Link(conf, filepath.Join(d, "copy")); err != nil {
		t.Fatal(err)
	}
	ci, _ := os.Stat(conf)
	binds, _ := rtView(filepath.Join(tmp, "ws"), "", []string{conf}).ForCommand([]string{filepath.Join(d, "customer.py")})
	for _, b := range binds {
		if fi, err := os.Stat(b.Src); err == nil && os.SameFile(fi, ci) {
			t.Errorf("%s is the hidden file (hard link)", b.Src)
		}
	}
}

// Attack 10: an entry beside the hidden file is a link to / (or //, /.).
// Within(p, "/") is false for every p but "/", so entryPolicy neither
// skips nor splits "/", and expand binds the link: the host's root,
// with the hidden file, the workspace root, record_dir and HOME in it.
// Harness comparison: the same directory as the harness's.
func TestAdversaryEntryLinkToRoot(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	t.Setenv("HOME", home)
	os.Mkdir(home, 0o755)
	d := filepath.Join(tmp, "conf")
	conf := filepath.Join(d, "env.yaml")
	ws, rec := filepath.Join(tmp, "ws"), filepath.Join(tmp, "rec")
	rtWrite(t, filepath.Join(d, "customer.py"))
	rtWrite(t, conf)
	os.Mkdir(ws, 0o755)
	os.Mkdir(rec, 0o755)
	rtLink(t, "/", filepath.Join(d, "r1"))
	rtLink(t, "//.", filepath.Join(d, "r2"))
	rtLink(t, "../../../../../../../../..", filepath.Join(d, "r3"))
	secrets := []string{conf, ws, rec}
	control(t, filepath.Join(d, "r1"), secrets, home)
	if !Within(conf, "/") {
		t.Errorf("Within(%s, \"/\") is false", conf)
	}
	cmd := filepath.Join(d, "customer.py")
	binds, _ := rtView(ws, rec, []string{conf}).ForCommand([]string{cmd})
	if l := leaks(binds, secrets, home); len(l) > 0 {
		t.Errorf("side: exposed: %v", l)
	}
	hb, _, _ := rtView(ws, rec, []string{conf}, cmd).Binds()
	if l := leaks(hb, secrets, home); len(l) > 0 {
		t.Errorf("harness: exposed: %v", l)
	}
	// The plain control: the same directory without a hidden file is
	// bound whole; its links to / resolve inside the sandbox.
	os.Remove(conf)
	binds, _ = rtView(ws, rec, nil).ForCommand([]string{cmd})
	if l := leaks(binds, []string{ws, rec}, home); len(l) > 0 {
		t.Errorf("plain side: exposed: %v", l)
	}
}

// Harness only, without any hidden file: a 0700 program directory
// (expanded because private) with an entry "r1 -> /".
func TestAdversaryHarnessPrivateDirLinkToRoot(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	t.Setenv("HOME", home)
	os.Mkdir(home, 0o755)
	priv := filepath.Join("/var/tmp", "rt-"+filepath.Base(tmp))
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(priv)
	rtWrite(t, filepath.Join(priv, "agent"))
	rtLink(t, "/", filepath.Join(priv, "r1"))
	ws, rec := filepath.Join(tmp, "ws"), filepath.Join(tmp, "rec")
	os.Mkdir(ws, 0o755)
	os.Mkdir(rec, 0o755)
	secrets := []string{ws, rec}
	control(t, filepath.Join(priv, "r1"), secrets, home)
	hb, _, _ := rtView(ws, rec, nil, filepath.Join(priv, "agent")).Binds()
	if l := leaks(hb, secrets, home); len(l) > 0 {
		t.Errorf("harness: exposed: %v", l)
	}
}
