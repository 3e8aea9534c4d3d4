package session_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/harness/adapter/oneshot"
	"github.com/harnessd/harnessd/harness/adapter/pty"
	"github.com/harnessd/harnessd/internal/execpath/fixture"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// allAdapters is a registry with the line protocol, pty and one-shot
// adapters.
func allAdapters(t *testing.T) *harness.Registry {
	t.Helper()
	r := &harness.Registry{}
	for name, f := range map[string]harness.AdapterFactory{jsonl.Name: jsonl.Factory, pty.Name: pty.Factory, oneshot.Name: oneshot.Factory} {
		if err := r.Add(name, f); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// sandboxedWith is sandboxed with every adapter kind registered.
func sandboxedWith(t *testing.T, edit func(*config.Config)) *session.Session {
	t.Helper()
	if r := sandboxProbe(); !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationSandbox
	edit(cfg)
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(session.Options{Config: cfg, Adapters: allAdapters(t), Supervisor: supervisor(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// readmeHarness writes the README's "A complete harness in Python" as
// printed to dir/my-harness.
func readmeHarness(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "A complete harness in Python:")
	if !ok {
		t.Fatal(`README.md has no "A complete harness in Python:"`)
	}
	_, rest, _ = strings.Cut(rest, "```python\n")
	code, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.HasPrefix(code, "#!/usr/bin/env python3\n") {
		t.Fatalf("the README's Python harness is not a #!/usr/bin/env python3 block: %q", code)
	}
	p := filepath.Join(dir, "my-harness")
	if err := os.WriteFile(p, []byte(code), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// needPython3: the machine's python3 on PATH (a pyenv shim on the CI's).
func needPython3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		testbin.Missing(t, "python3 is not on PATH")
	}
	return p
}

// TestReadmePythonHarnessRunsInTheSandbox: the README's harness, started
// through the machine's own PATH (python3 there is a pyenv shim under the
// daemon's HOME on the CI's machine, which the sandbox hides), answers in
// sandbox isolation.
func TestReadmePythonHarnessRunsInTheSandbox(t *testing.T) {
	t.Logf("python3 on PATH: %s", needPython3(t))
	prog := readmeHarness(t, t.TempDir())
	s := sandboxed(t, func(c *config.Config) { c.Harness.Command = []string{prog} })
	reset(t, s)
	if got := responseText(t, s, "hello"); got != "HELLO" {
		t.Fatalf("the README harness answered %q", got)
	}
	obs := step(t, s, "bye")
	if !obs.Done || obs.Metadata.Response == nil || *obs.Metadata.Response != "BYE" {
		t.Fatalf("bye: %+v", obs.Metadata)
	}
}

// TestPythonREPLThroughPtyInTheSandbox: python3 -i (through the machine's
// PATH) in a terminal keeps its state across turns in sandbox isolation.
func TestPythonREPLThroughPtyInTheSandbox(t *testing.T) {
	needPython3(t)
	s := sandboxedWith(t, func(c *config.Config) {
		c.Harness.Adapter = pty.Name
		c.Harness.Command = []string{"python3", "-q", "-i"}
		c.Harness.Options = map[string]any{"prompt": `>>> `, "bracketed_paste": false}
	})
	reset(t, s)
	if got := responseText(t, s, "x = 6 * 7"); got != "" {
		t.Fatalf("x = 6 * 7 answered %q", got)
	}
	if got := responseText(t, s, "print(x, end='')"); got != "42" {
		t.Fatalf("the REPL lost its state: %q", got)
	}
}

// TestHarnessInAPrivateDirectory: a harness program in a 0700 directory
// (as mktemp -d makes), under /tmp (each sandbox has its own) and
// elsewhere, starts and answers; the host's modes are unchanged.
func TestHarnessInAPrivateDirectory(t *testing.T) {
	th := testbin.Path(t, "testharness")
	for _, base := range []string{t.TempDir(), "/var/tmp"} {
		dir, err := os.MkdirTemp(base, "private-")
		if err != nil {
			testbin.Missing(t, "no %s to make a private directory in: %v", base, err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		prog := filepath.Join(dir, "testharness")
		if err := copyExe(th, prog); err != nil {
			t.Fatal(err)
		}
		s := sandboxed(t, func(c *config.Config) { c.Harness.Command = []string{prog, "agent"} })
		reset(t, s)
		if got := responseText(t, s, "pwd"); !strings.HasPrefix(got, "/") {
			t.Fatalf("%s: pwd %q", dir, got)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("the host directory's mode changed: %v %v", fi.Mode(), err)
		}
	}
}

func copyExe(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestHiddenPathFailureSaysWhatToDo: a harness whose start needs a path
// the sandbox hides (a pyenv shim's libexec under the daemon's 0700 HOME,
// with the resolution off: what a manager execpath does not know looks
// like) fails with a message naming the path, why it is hidden, and the
// knobs; for each adapter kind.
func TestHiddenPathFailureSaysWhatToDo(t *testing.T) {
	th := testbin.Path(t, "testharness")
	for _, kind := range []string{jsonl.Name, pty.Name, oneshot.Name} {
		t.Run(kind, func(t *testing.T) {
			home := privateHome(t)
			l, err := fixture.Pyenv(home, th, "", "agent")
			if err != nil {
				t.Fatal(err)
			}
			noResolution(t)
			s := sandboxedWith(t, func(c *config.Config) {
				c.Harness.Adapter = kind
				c.Harness.Command = l.Command
				c.Harness.Env = map[string]string{"PATH": l.PATH}
				switch kind {
				case pty.Name:
					c.Harness.Command = append(c.Harness.Command, "--protocol", "tui")
					c.Harness.Options = map[string]any{"prompt": `testharness> `}
				case oneshot.Name:
					c.Harness.Command = append(c.Harness.Command, "--protocol", "oneshot", "--", "{message}")
				}
			})
			obs, err := s.Reset(context.Background(), session.ResetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if kind == oneshot.Name && !obs.Done {
				// A one-shot harness runs with its first turn.
				obs = step(t, s, "hello")
			}
			m := obs.Metadata
			if !obs.Done || m.ErrorType == "" {
				t.Fatalf("the harness started: %+v", m)
			}
			libexec := filepath.Join(home, ".pyenv", "libexec", "pyenv")
			for _, want := range []string{libexec + " is hidden", "inside " + home, "the daemon's HOME", "sandbox.read_only: [" + filepath.Join(home, ".pyenv") + "]", "--isolation process"} {
				if !strings.Contains(m.Error, want) {
					t.Errorf("the %s failure does not say %q:\n%s\nstderr tail: %s", kind, want, m.Error, m.StderrTail)
				}
			}
			if !strings.Contains(m.StderrTail, "No such file or directory") {
				t.Errorf("the %s failure has no stderr tail: %q", kind, m.StderrTail)
			}
			if st := s.State(); st.LastError == nil || !strings.Contains(st.LastError.Message, "sandbox.read_only") {
				t.Errorf("state's last error: %+v", st.LastError)
			}
			_ = wire.FailureStartupFailed
		})
	}
}

// TestSandboxReadOnlyExposesAndRefuses: sandbox.read_only binds a
// directory under the daemon's HOME into the sandbox (~ expanded);
// HOME itself, the record directory and the workspace root are refused.
func TestSandboxReadOnlyExposesAndRefuses(t *testing.T) {
	home := privateHome(t)
	data := filepath.Join(home, "data")
	os.MkdirAll(data, 0o755)
	os.WriteFile(filepath.Join(data, "words"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(home, "secret"), []byte("s3cret"), 0o644)
	s := sandboxed(t, func(c *config.Config) { c.Sandbox.ReadOnly = []string{"~/data"} })
	reset(t, s)
	if got := responseText(t, s, "attack read-file "+filepath.Join(data, "words")); !strings.Contains(got, `"ok":true`) {
		t.Fatalf("sandbox.read_only ~/data not visible: %s", got)
	}
	if got := responseText(t, s, "attack read-file "+filepath.Join(home, "secret")); !strings.Contains(got, `"ok":false`) {
		t.Fatalf("the rest of HOME is visible: %s", got)
	}
	if got := responseText(t, s, "write "+filepath.Join(data, "new")+" x;;say after"); strings.Contains(got, "wrote") {
		t.Fatalf("sandbox.read_only is writable: %s", got)
	}
	for _, bad := range []string{"~", "/", filepath.Dir(home)} {
		cfg := testConfig(t)
		cfg.Isolation = config.IsolationSandbox
		cfg.Sandbox.ReadOnly = []string{bad}
		if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), "sandbox.read_only") {
			t.Errorf("sandbox.read_only %q accepted: %v", bad, err)
		}
	}
	rec := t.TempDir()
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationSandbox
	cfg.RecordDir = rec
	cfg.Sandbox.ReadOnly = []string{rec}
	if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), "record directory") {
		t.Errorf("sandbox.read_only of record_dir accepted: %v", err)
	}
	// A token file the daemon hides: refused at the reset, with the reason.
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("t"), 0o600)
	cfg = testConfig(t)
	cfg.Isolation = config.IsolationSandbox
	cfg.Sandbox.ReadOnly = []string{filepath.Dir(tok)}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	ts, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t), Hide: []string{tok}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close(context.Background())
	if _, err := ts.Reset(context.Background(), session.ResetOptions{}); err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), tok) {
		t.Errorf("sandbox.read_only holding the token file: %v", err)
	}
}

// TestEnvNotFoundNamesTheHiddenProgram: a harness that is a wrapper
// script running agentpy (what the resolution does not read), agentpy on
// the host's PATH only through a PATH entry that is the daemon's HOME
// (never bound back: it would show all of HOME), fails with the shell's
// "agentpy: not found" (env's "No such file or directory" with the
// resolution off for "#!/usr/bin/env agentpy"); the message names
// where agentpy is on the host, why it is hidden and the
// sandbox.read_only entry that exposes it — and with that entry the
// harness starts and answers.
func TestEnvNotFoundNamesTheHiddenProgram(t *testing.T) {
	th := testbin.Path(t, "testharness")
	home := privateHome(t)
	interp := filepath.Join(home, "agentpy")
	if err := os.WriteFile(interp, []byte("#!/bin/sh\nexec "+th+" agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "h")
	os.Mkdir(dir, 0o755)
	prog := filepath.Join(dir, "harness")
	os.WriteFile(prog, []byte("#!/bin/sh\nexec agentpy \"$@\"\n"), 0o755)
	envProg := filepath.Join(dir, "harness-env")
	os.WriteFile(envProg, []byte("#!/usr/bin/env agentpy\n"), 0o755)
	edit := func(prog string, ro ...string) func(*config.Config) {
		return func(c *config.Config) {
			c.Harness.Command = []string{prog}
			c.Harness.Env = map[string]string{"PATH": home + ":/usr/bin:/bin"}
			// agentpy's script names the test binary, which no resolution
			// reads out of a script: expose its directory (under /tmp when
			// go test built it there) so that only agentpy is at stake.
			c.Sandbox.ReadOnly = append([]string{filepath.Dir(th)}, ro...)
		}
	}
	check := func(msg string) {
		t.Helper()
		for _, want := range []string{"agentpy (found on the host's PATH as " + interp + ")", interp + " is hidden", "the daemon's HOME", "sandbox.read_only: [" + interp + "]", "--isolation process"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the failure does not say %q:\n%s", want, msg)
			}
		}
	}
	check(startFails(t, sandboxed(t, edit(prog))))
	// The resolution finds env's agentpy itself; without it, env fails.
	reset(t, sandboxed(t, edit(envProg)))
	noResolution(t)
	check(startFails(t, sandboxed(t, edit(envProg))))
	episode.ResolveCommand = true
	s := sandboxed(t, edit(prog, "~/agentpy"))
	reset(t, s)
	if got := responseText(t, s, "pwd"); !strings.HasPrefix(got, "/") {
		t.Fatalf("with sandbox.read_only: pwd %q", got)
	}
}

// TestHarnessBesideItsHiddenConfiguration: the README's layout — the
// harness program next to the configuration file that names it, in a
// project under the daemon's HOME — starts in sandbox isolation: the
// project directory is bound entry by entry without the configuration
// file (and without links to the token file or its directory), so the
// harness's siblings are visible and the daemon's files are not; a PATH
// entry that links to the token's directory is not bound either.
func TestHarnessBesideItsHiddenConfiguration(t *testing.T) {
	if r := sandboxProbe(); !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
	th := testbin.Path(t, "testharness")
	home := privateHome(t)
	proj := filepath.Join(home, "proj")
	os.MkdirAll(proj, 0o755)
	prog := filepath.Join(proj, "agent")
	if err := copyExe(th, prog); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(proj, "env.yaml")
	os.WriteFile(conf, []byte("harness: {command: [./agent, agent]}\n"), 0o644)
	notes := filepath.Join(proj, "notes.txt")
	os.WriteFile(notes, []byte("visible"), 0o644)
	tokDir := t.TempDir()
	tok := filepath.Join(tokDir, "token")
	os.WriteFile(tok, []byte("s3cret"), 0o644)
	os.Symlink(tok, filepath.Join(proj, "tok"))
	os.Symlink(tokDir, filepath.Join(proj, "tokdir"))
	// A PATH entry that links to the token's directory.
	os.Symlink(tokDir, filepath.Join(home, "bin"))
	cfg := testConfig(t)
	cfg.Isolation = config.IsolationSandbox
	cfg.Harness.Command = []string{prog, "agent"}
	cfg.Harness.Env = map[string]string{"PATH": filepath.Join(home, "bin") + ":/usr/bin:/bin"}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t), Hide: []string{conf, tok}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	reset(t, s)
	if got := responseText(t, s, "attack read-file "+notes); !strings.Contains(got, `"ok":true`) {
		t.Fatalf("the harness's sibling is not visible: %s", got)
	}
	for _, hidden := range []string{conf, filepath.Join(proj, "tok"), filepath.Join(proj, "tokdir", "token"), filepath.Join(home, "bin", "token"), tok} {
		got := responseText(t, s, "attack read-file "+hidden)
		if !strings.Contains(got, `"ok":false`) && !strings.Contains(got, `"count":0`) {
			t.Errorf("%s is readable in the sandbox: %s", hidden, got)
		}
	}
}

// TestPrivateProgramFileSaysWhy: a program file that is itself 0700 (not
// a directory above it) cannot run as the harness's uid without changing
// the host; the failure says so and what to do.
func TestPrivateProgramFileSaysWhy(t *testing.T) {
	th := testbin.Path(t, "testharness")
	dir := filepath.Join(t.TempDir(), "bin")
	os.Mkdir(dir, 0o755)
	prog := filepath.Join(dir, "agent")
	if err := copyExe(th, prog); err != nil {
		t.Fatal(err)
	}
	os.Chmod(prog, 0o700)
	msg := startFails(t, sandboxed(t, func(c *config.Config) { c.Harness.Command = []string{prog, "agent"} }))
	for _, want := range []string{prog + " is visible but not readable by the harness's uid (mode 0700 on the host)", "--isolation process"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
}
