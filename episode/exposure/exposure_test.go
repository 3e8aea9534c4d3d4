package exposure

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/wire"
)

// TestExposuresBindBackWhatTheSandboxCovers: the harness program under
// /tmp (each sandbox has a private one), a script argument inside a
// node_modules, and a PATH entry under the daemon's HOME are bound back;
// a PATH entry that holds a hidden path (the daemon's HOME itself) never
// is.
func TestExposuresBindBackWhatTheSandboxCovers(t *testing.T) {
	tmp := t.TempDir() // under os.TempDir(): covered inside a sandbox
	prog := filepath.Join(tmp, "clone", "bin", "agent")
	script := filepath.Join(tmp, "clone", "node_modules", "pkg", "cli.js")
	for _, f := range []string{prog, script} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(tmp, "home")
	homeBin := filepath.Join(home, "bin")
	os.MkdirAll(homeBin, 0o755)
	t.Setenv("HOME", home)
	v := New(&config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{prog, script}, Env: map[string]string{"PATH": homeBin + ":" + home + ":/usr/bin"}}}}, nil, true, nil)
	binds, _, err := v.Binds()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, b := range binds {
		if b.Writable {
			t.Errorf("%s bound writable", b.Src)
		}
		got[b.Src] = true
	}
	for _, want := range []string{filepath.Dir(prog), filepath.Join(tmp, "clone", "node_modules"), homeBin} {
		if !got[want] {
			t.Errorf("%s not bound back; binds %v", want, binds)
		}
	}
	if got[home] {
		t.Errorf("the daemon's HOME (a PATH entry) was bound back")
	}
	if got["/usr/bin"] {
		t.Errorf("/usr/bin (visible anyway) was bound")
	}
}

// TestExposuresBindResolvedSubtreesAndExpandPrivateDirectories: a pyenv
// under a 0700 HOME brings its libexec and the selected version, never
// HOME or the pyenv root as a whole; a program in a 0700 directory is
// bound entry by entry (the directory's own mode stays out), with the
// directory covered so that the entries have fresh mount points.
func TestExposuresBindResolvedSubtreesAndExpandPrivateDirectories(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o700)
	t.Setenv("HOME", home)
	root := filepath.Join(home, ".pyenv")
	for _, f := range []string{"libexec/pyenv", "versions/3.12.1/bin/python3", "versions/3.11.7/bin/python3"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte("#!/bin/sh\n"), 0o755)
	}
	os.WriteFile(filepath.Join(root, "version"), []byte("3.12.1\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "shims"), 0o755)
	os.WriteFile(filepath.Join(root, "shims", "python3"), []byte("#!/bin/sh\nexport PYENV_ROOT=\""+root+"\"\nexec \""+root+"/libexec/pyenv\" exec \"$program\" \"$@\"\n"), 0o755)
	priv := filepath.Join("/var/tmp", "exposures-test-"+filepath.Base(t.TempDir()))
	if err := os.Mkdir(priv, 0o700); err != nil {
		testbin.Missing(t, "no /var/tmp: %v", err)
	}
	defer os.RemoveAll(priv)
	os.WriteFile(filepath.Join(priv, "agent"), []byte("#!/usr/bin/env python3\n"), 0o755)
	os.WriteFile(filepath.Join(priv, "lib.py"), nil, 0o644)
	v := New(&config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{filepath.Join(priv, "agent")}, Env: map[string]string{"PATH": filepath.Join(root, "shims") + ":/usr/bin:/bin"}}}}, nil, true, nil)
	binds, hide, err := v.Binds()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, b := range binds {
		got[b.Src] = true
		if b.Src == home || b.Src == root || Within(home, b.Src) || b.Src == priv {
			t.Errorf("%s bound", b.Src)
		}
	}
	for _, want := range []string{filepath.Join(root, "libexec"), filepath.Join(root, "versions", "3.12.1"), filepath.Join(priv, "agent"), filepath.Join(priv, "lib.py")} {
		if !got[want] {
			t.Errorf("%s not bound: %v", want, binds)
		}
	}
	if got[filepath.Join(root, "versions", "3.11.7")] {
		t.Errorf("an unselected version is bound")
	}
	covered := false
	for _, h := range hide {
		covered = covered || h == priv
	}
	if !covered {
		t.Errorf("the private directory %s is not covered: %v", priv, hide)
	}
}

// TestSideCommandBesideAHiddenFileIsBoundWithoutIt: a side process's
// program (a simulated user's) under /tmp, in the directory of the
// configuration file the daemon hides from every sandbox, is bound entry
// by entry: its program and a sibling come back, the hidden file does
// not. The control: the same directory without a hidden file is bound
// whole.
func TestSideCommandBesideAHiddenFileIsBoundWithoutIt(t *testing.T) {
	tmp := t.TempDir() // under os.TempDir(): covered inside a sandbox
	for _, name := range []string{"withconf", "plain"} {
		for _, f := range []string{"customer.py", "lib.py", "env.yaml"} {
			os.MkdirAll(filepath.Join(tmp, name), 0o755)
			if err := os.WriteFile(filepath.Join(tmp, name, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	conf := filepath.Join(tmp, "withconf", "env.yaml")
	v := New(&config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}}}}, []string{conf}, true, nil)
	binds, _ := v.ForCommand([]string{filepath.Join(tmp, "withconf", "customer.py")})
	got := map[string]bool{}
	for _, b := range binds {
		got[b.Src] = true
	}
	for _, want := range []string{"customer.py", "lib.py"} {
		if !got[filepath.Join(tmp, "withconf", want)] {
			t.Errorf("%s not bound back beside the hidden file; binds %v", want, binds)
		}
	}
	if got[conf] || got[filepath.Join(tmp, "withconf")] {
		t.Errorf("the hidden configuration file came back with its directory; binds %v", binds)
	}
	binds, _ = v.ForCommand([]string{filepath.Join(tmp, "plain", "customer.py")})
	got = map[string]bool{}
	for _, b := range binds {
		got[b.Src] = true
	}
	if !got[filepath.Join(tmp, "plain")] || got[filepath.Join(tmp, "plain", "customer.py")] {
		t.Errorf("a directory without a hidden file: binds %v, want it whole", binds)
	}
}

// TestExplainNamesOnlyKnobsThatApply: a start-up failure naming a file
// under the daemon's HOME is explained with the knobs that change it; for
// the harness that includes --isolation process, for a simulated user
// (which runs in a sandbox of its own in every isolation) it does not.
func TestExplainNamesOnlyKnobsThatApply(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	prog := filepath.Join(home, "customer.py")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	v := New(&config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}}}}, nil, true, nil)
	for _, c := range []struct {
		typ         wire.FailureType
		withProcess bool
	}{{wire.FailureHarnessCrashed, true}, {wire.FailureUser, false}} {
		f := &harness.Failure{Type: c.typ, Message: "start " + prog + ": not found in the sandbox"}
		v.Explain(filepath.Join(t.TempDir(), "episode"), f)
		if !strings.Contains(f.Message, "is hidden") || !strings.Contains(f.Message, "sandbox.read_only") {
			t.Fatalf("%s: not explained: %s", c.typ, f.Message)
		}
		if got := strings.Contains(f.Message, "--isolation process"); got != c.withProcess {
			t.Errorf("%s: names --isolation process: %v, want %v: %s", c.typ, got, c.withProcess, f.Message)
		}
	}
}

// TestSideCommandThroughAVersionManagerShim: a side command run as a bare
// name through a pyenv shim under the daemon's HOME (a task's MCP server
// "python3 server.py") gets what the shim executes bound, as the harness's
// command does: pyenv's libexec and the selected version. The control: the
// harness's own binds (its command needs no Python) hold neither, so they
// come from the side command's resolution.
func TestSideCommandThroughAVersionManagerShim(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o700)
	t.Setenv("HOME", home)
	root := filepath.Join(home, ".pyenv")
	for _, f := range []string{"libexec/pyenv", "versions/3.12.1/bin/python3"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte("#!/bin/sh\n"), 0o755)
	}
	os.WriteFile(filepath.Join(root, "version"), []byte("3.12.1\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "shims"), 0o755)
	os.WriteFile(filepath.Join(root, "shims", "python3"), []byte("#!/bin/sh\nexport PYENV_ROOT=\""+root+"\"\nexec \""+root+"/libexec/pyenv\" exec \"$program\" \"$@\"\n"), 0o755)
	v := New(&config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}, Env: map[string]string{"PATH": filepath.Join(root, "shims") + ":/usr/bin:/bin"}}}}, nil, true, nil)
	wants := []string{filepath.Join(root, "libexec"), filepath.Join(root, "versions", "3.12.1")}
	hb, _, _ := v.Binds()
	for _, b := range hb {
		for _, w := range wants {
			if Within(w, b.Src) {
				t.Fatalf("control: the harness's own binds already hold %s (%v)", w, hb)
			}
		}
	}
	binds, _ := v.ForCommand([]string{"python3", "server.py"})
	got := map[string]bool{}
	for _, b := range binds {
		got[b.Src] = true
		if b.Src == home || b.Src == root {
			t.Errorf("%s bound", b.Src)
		}
	}
	for _, w := range wants {
		if !got[w] {
			t.Errorf("%s not bound for the side command: %v", w, binds)
		}
	}
}

// TestForCommandAnswersAreSharedSafely: ForCommand answers a command once
// and hands the same answer to every caller; a caller appending to it (as
// the side sandbox's configuration does) leaves the next caller's answer
// as it was.
func TestForCommandAnswersAreSharedSafely(t *testing.T) {
	tmp := t.TempDir() // covered inside a sandbox: the program's directory is bound
	prog := filepath.Join(tmp, "srv", "server")
	os.MkdirAll(filepath.Dir(prog), 0o755)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	v := New(&config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}}}}, nil, true, nil)
	b1, c1 := v.ForCommand([]string{prog})
	want := len(b1)
	_ = append(b1, sandbox.Bind{Src: "/appended"})
	_ = append(c1, "/appended")
	b2, c2 := v.ForCommand([]string{prog})
	if len(b2) != want || len(c2) != len(c1) {
		t.Fatalf("second answer %v %v, first %v %v", b2, c2, b1, c1)
	}
	for _, b := range b2[:cap(b2)] {
		if b.Src == "/appended" {
			t.Fatalf("an append to the first answer reached the second: %v", b2[:cap(b2)])
		}
	}
	if !slices.ContainsFunc(b2, func(b sandbox.Bind) bool { return b.Src == filepath.Dir(prog) }) {
		t.Fatalf("the program's directory is not bound: %v", b2)
	}
}

// TestExplainDoesNotOpenAFIFOTheHarnessNames: a harness that fails at
// start naming a FIFO it made ("cannot execute PATH") had the daemon, as
// root, open it to read a "#!" line: the open waited for a writer for
// good, and with it the reset and the daemon's drain. Only regular files
// are read now, without blocking. The control: a script named the same
// way whose interpreter the sandbox hides is still explained.
func TestExplainDoesNotOpenAFIFOTheHarnessNames(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	root := filepath.Join(t.TempDir(), "episode")
	os.Mkdir(root, 0o755)
	fifo, script, interp := filepath.Join(root, "f"), filepath.Join(root, "run.sh"), filepath.Join(home, "interp")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a build that blocks in the open gets its writer
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	os.WriteFile(interp, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(script, []byte("#!"+interp+"\n"), 0o755)
	v := New(&config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}}}}, nil, true, nil)
	f := &harness.Failure{Type: wire.FailureHarnessCrashed, Message: "start: not found",
		StderrTail: "cannot execute " + fifo + "\ncannot execute " + script + "\n"}
	done := make(chan struct{})
	go func() { v.Explain(root, f); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Explain is still opening the FIFO after 30 s")
	}
	if !strings.Contains(f.Message, "the interpreter of "+script) || !strings.Contains(f.Message, interp+" is hidden") {
		t.Errorf("control: the script's hidden interpreter is not explained: %s", f.Message)
	}
}
