package exposure

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process/sandbox"
)

// TestMain lets this test binary be the init of the sandboxes its tests
// start (it lies where go test builds it, which every sandbox's uid can
// reach).
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}

// needSandbox skips (fails under CI=true) where no sandbox runs.
func needSandbox(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the sandbox's uids need root")
	}
	if r := sandbox.Probe(context.Background(), ""); !r.OK {
		testbin.Missing(t, "no sandbox here: %s", r.Detail)
	}
}

// TestSideBindsKeepHiddenFilesHiddenInsideASandbox: a side program
// (customer.py) beside the daemon's configuration (env.yaml, hidden from
// every sandbox), with entries "r1 -> /" and "aws -> $HOME/.aws" beside
// it. Inside a sandbox built from exposure's ForCommand as the episode
// builds a side sandbox (hiding HiddenPaths and the covers), the program
// is there, and neither the configuration (at its own path or through
// r1) nor the HOME file (through aws) can be read; the same holds for the
// directory without a configuration (bound whole). The positive control:
// a sandbox given "r1" as a bind by hand does read the token through it,
// so the reads would see an exposure (an outside review found ForCommand
// returning exactly that bind).
func TestSideBindsKeepHiddenFilesHiddenInsideASandbox(t *testing.T) {
	needSandbox(t)
	base := t.TempDir()
	// Traversable by the sandbox's uid, as a clone in /srv or a 0755 HOME is.
	for _, d := range []string{base, filepath.Dir(base)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(base, "home")
	mustWrite(t, filepath.Join(home, ".aws", "credentials"), "aws_secret=AKIAHOME\n", 0o644)
	t.Setenv("HOME", home)
	for _, name := range []string{"withconf", "plain"} {
		d := filepath.Join(base, name)
		mustWrite(t, filepath.Join(d, "customer.py"), "#!/bin/sh\n", 0o755)
		mustLink(t, "/", filepath.Join(d, "r1"))
		mustLink(t, filepath.Join(home, ".aws"), filepath.Join(d, "aws"))
	}
	conf := filepath.Join(base, "withconf", "env.yaml")
	mustWrite(t, conf, "TOKEN=s3cret\n", 0o644)
	cfg := &config.Config{Harness: config.HarnessConfig{Config: harness.Config{Command: []string{"/bin/true"}}}}
	cfg.Workspace.Root = filepath.Join(base, "ws")
	v := New(cfg, []string{conf}, true, nil)

	reads := func(d string) string {
		return "echo direct:; cat " + conf + "; echo via-links:; cat " + filepath.Join(d, "r1") + conf +
			" " + filepath.Join(d, "aws", "credentials") + "; echo program:; ls " + filepath.Join(d, "customer.py")
	}
	for _, name := range []string{"withconf", "plain"} {
		d := filepath.Join(base, name)
		binds, covers := v.ForCommand([]string{filepath.Join(d, "customer.py")})
		out := runInside(t, sandbox.Config{Name: "side-" + name, Hide: append(v.HiddenPaths(), covers...), Binds: binds}, reads(d))
		direct, rest, _ := strings.Cut(out, "via-links:")
		links, program, _ := strings.Cut(rest, "program:")
		if strings.Contains(direct, "s3cret") || strings.Contains(links, "s3cret") || strings.Contains(links, "AKIAHOME") {
			t.Errorf("%s: a hidden file is readable inside (binds %v):\n%s", name, binds, out)
		}
		if !strings.Contains(program, "customer.py") || strings.Contains(program, "No such file") {
			t.Errorf("%s: the side program is not there (binds %v):\n%s", name, binds, out)
		}
	}
	d := filepath.Join(base, "withconf")
	out := runInside(t, sandbox.Config{Name: "side-control", Hide: []string{conf}, Binds: []sandbox.Bind{{Src: filepath.Join(d, "r1")}}}, reads(d))
	if _, rest, _ := strings.Cut(out, "via-links:"); !strings.Contains(rest, "s3cret") {
		t.Fatalf("control: a bind of r1 -> / given by hand did not show the token; the reads cannot see an exposure:\n%s", out)
	}
}

// runInside runs sh -c script in a sandbox of cfg and returns its output.
func runInside(t *testing.T, cfg sandbox.Config, script string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg.Stdout, cfg.Stderr = f, f
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	r, err := sb.Run(ctx, sandbox.Command{Path: "/bin/sh", Args: []string{"-c", script}, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustWrite(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}
