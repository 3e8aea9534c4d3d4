package session_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/episode"
	"github.com/harnessd/harnessd/internal/execpath/fixture"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// privateHome makes a 0700 directory the daemon's HOME for the test: the
// sandbox hides it as a whole, as it hides a real one.
func privateHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	return home
}

// layoutSession is a sandboxed session whose harness is the layout's
// command, with the layout's PATH and variables.
func layoutSession(t *testing.T, l *fixture.Layout, env map[string]string) *session.Session {
	t.Helper()
	return sandboxed(t, func(c *config.Config) {
		c.Harness.Command = l.Command
		c.Harness.Env = map[string]string{"PATH": l.PATH}
		for k, v := range l.Env {
			c.Harness.Env[k] = v
		}
		for k, v := range env {
			c.Harness.Env[k] = v
		}
	})
}

// noResolution turns execpath's resolution off for the rest of the test
// (the negative controls).
func noResolution(t *testing.T) {
	episode.ResolveCommand = false
	t.Cleanup(func() { episode.ResolveCommand = true })
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// startFails resets s and wants startup_failed; it returns the message
// and stderr tail.
func startFails(t *testing.T, s *session.Session) string {
	t.Helper()
	obs, err := s.Reset(context.Background(), session.ResetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Done || obs.Metadata.ErrorType != wire.FailureStartupFailed {
		t.Fatalf("the harness started: %+v", obs.Metadata)
	}
	return obs.Metadata.Error + "\n" + obs.Metadata.StderrTail
}

// TestVersionManagersRunInTheSandbox: each manager laid out as it is on
// disk under a 0700 HOME (which the sandbox hides) starts in sandbox
// isolation and answers a turn; without the resolution of the harness
// command (only its PATH entries bound back, as before) each fails to
// start.
func TestVersionManagersRunInTheSandbox(t *testing.T) {
	th := testbin.Path(t, "testharness")
	// The machine's own pyenv (python3 on PATH a shim of it), whose
	// libexec the second pyenv case copies.
	realPyenv := ""
	if p, err := exec.LookPath("python3"); err == nil && filepath.Base(filepath.Dir(p)) == "shims" {
		if root := filepath.Dir(filepath.Dir(p)); fileExists(filepath.Join(root, "libexec", "pyenv")) {
			realPyenv = root
		}
	}
	cases := []struct {
		name string
		lay  func(home string) (*fixture.Layout, error)
		env  map[string]string
	}{
		{"pyenv", func(h string) (*fixture.Layout, error) { return fixture.Pyenv(h, th, "", "agent") }, nil},
		{"pyenv-real-libexec", func(h string) (*fixture.Layout, error) {
			if realPyenv == "" {
				return nil, nil
			}
			return fixture.Pyenv(h, th, realPyenv, "agent")
		}, nil},
		// asdf keeps its data under $HOME/.asdf; the harness's HOME is the
		// episode's, so its users name the data directory and version.
		{"asdf", func(h string) (*fixture.Layout, error) { return fixture.Asdf(h, th, "agent") }, map[string]string{"ASDF_NODEJS_VERSION": "20.11.0"}},
		{"nvm", func(h string) (*fixture.Layout, error) { return fixture.Nvm(h, th, "agent") }, nil},
		{"venv", func(h string) (*fixture.Layout, error) { return fixture.Venv(h, th) }, nil},
		{"conda", func(h string) (*fixture.Layout, error) { return fixture.Conda(h, th) }, nil},
		{"local-bin", func(h string) (*fixture.Layout, error) { return fixture.LocalBin(h, th) }, nil},
		{"homebrew", func(h string) (*fixture.Layout, error) {
			prefix := filepath.Join(filepath.Dir(h), "linuxbrew", ".linuxbrew")
			if err := os.MkdirAll(filepath.Dir(prefix), 0o700); err != nil {
				return nil, err
			}
			return fixture.Homebrew(prefix, h, th, "agent")
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := privateHome(t)
			l, err := c.lay(home)
			if err != nil {
				t.Fatal(err)
			}
			if l == nil {
				testbin.Missing(t, "python3 on PATH is not a pyenv shim: no real pyenv to copy libexec from")
			}
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			if c.name == "asdf" {
				env["ASDF_DATA_DIR"] = filepath.Join(home, ".asdf")
			}
			secret := filepath.Join(home, ".ssh", "id_ed25519")
			os.MkdirAll(filepath.Dir(secret), 0o700)
			if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o644); err != nil {
				t.Fatal(err)
			}
			s := layoutSession(t, l, env)
			reset(t, s)
			if got := responseText(t, s, "pwd"); !strings.HasPrefix(got, "/") {
				t.Fatalf("pwd: %q", got)
			}
			// HOME stays hidden: only the resolved subtrees are bound (a
			// file of one is readable: the positive control).
			if got := responseText(t, s, "attack read-file "+l.Needs[0]); !strings.Contains(got, `"ok":true`) {
				t.Fatalf("read %s (needed, bound): %s", l.Needs[0], got)
			}
			if got := responseText(t, s, "attack read-file "+secret); !strings.Contains(got, `"ok":false`) {
				t.Fatalf("the daemon's HOME is visible: read %s: %s", secret, got)
			}

			if c.name == "nvm" {
				// nvm-exec is at the top of $NVM_DIR, and the program's
				// directory is bound whole, every version with it: that
				// ran before the resolution too.
				return
			}
			noResolution(t)
			msg := startFails(t, layoutSession(t, l, env))
			t.Logf("without the resolution: %s", msg)
		})
	}
}
