package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stdio tool server whose dir is not there is reported as such: its
// start failed with "program /usr/bin/sh not found" (the chdir's ENOENT),
// sending the operator to look for the program. Its control: the same
// server with an existing dir has no problem.
func TestAToolServersMissingDirIsNamed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	for sub, want := range map[string]string{
		"nodir": "its dir " + filepath.Join(dir, "nodir") + " is not a directory (it does not exist); the server runs there: fix dir",
		"file":  "its dir " + filepath.Join(dir, "file") + " is not a directory (it is a file)",
		".":     "",
	} {
		cfg, err := ParseConfig([]byte("harness: {command: [sh]}\ntools:\n  - {name: t, command: [sh], dir: "+sub+"}\n"), dir)
		if err != nil {
			t.Fatal(err)
		}
		ps := cfg.CheckPrograms()
		switch {
		case want == "" && len(ps) != 0:
			t.Errorf("dir %s: %v, want no problem", sub, ps)
		case want != "" && (len(ps) != 1 || !strings.HasPrefix(ps[0].Cause, want) || ps[0].Key != `tools[0].command (tool server "t")`):
			t.Errorf("dir %s: %v, want one problem starting %q", sub, ps, want)
		}
	}
}

// A sandbox.read_only path that is not there is a problem at start-up and
// for validate: it passed both, and every reset then failed binding it.
// Its control: an existing path is not reported.
func TestAMissingReadOnlyPathIsAProblem(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "models")
	cfg, err := ParseConfig([]byte("harness: {command: [sh]}\nsandbox:\n  read_only: ["+dir+", "+missing+"]\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ps := cfg.CheckPrograms()
	want := missing + ": it does not exist; every reset would fail"
	if len(ps) != 1 || ps[0].Key != "sandbox.read_only[1]" || !strings.HasPrefix(ps[0].Cause, want) {
		t.Errorf("%v, want sandbox.read_only[1]: %s", ps, want)
	}
}
