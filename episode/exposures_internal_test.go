package episode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
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
	s := &Env{Config: &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{prog, script}, Env: map[string]string{"PATH": homeBin + ":" + home + ":/usr/bin"}}}}}
	binds, _, err := s.exposures()
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
