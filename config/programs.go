package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/rubric"
)

// Problem is one reason an environment cannot run, found before any
// episode: it names the configuration key and the cause in the user's
// terms. harnessd serve refuses to start on a program problem; harnessd
// validate reports every problem at once.
type Problem struct {
	// Key is the configuration key, e.g. harness.command, tools[1].command,
	// rubrics[0].tool.
	Key string
	// Cause says what is wrong and, where it helps, how to fix it.
	Cause string
}

// String is "KEY: CAUSE".
func (p Problem) String() string { return p.Key + ": " + p.Cause }

// CheckPrograms resolves, as a reset would, the harness program and every
// stdio tool server's program (and command rubrics' programs given by name
// or absolute path), and reports each one that does not exist or is not
// executable, and each sandbox.read_only path that does not exist. A bare name is looked up in the PATH that program will get;
// a relative path of a tool server is taken from its dir (the
// configuration file's directory by default). It starts nothing. Call it
// on a normalized Config.
func (c *Config) CheckPrograms() []Problem {
	var out []Problem
	if len(c.Harness.Command) > 0 {
		prog := c.Harness.Command[0]
		if !strings.Contains(prog, "/") || filepath.IsAbs(prog) {
			if cause := checkProgram(prog, pathOf(c.Harness.Env), ""); cause != "" {
				out = append(out, Problem{Key: "harness.command", Cause: cause})
			}
		}
	}
	for i, t := range c.Tools {
		if len(t.Command) == 0 {
			continue
		}
		if cause := checkProgram(t.Command[0], pathOf(t.Env), t.Dir); cause != "" {
			out = append(out, Problem{Key: fmt.Sprintf("tools[%d].command (tool server %q)", i, t.Name), Cause: cause})
		}
	}
	if u := c.User; u != nil && len(u.Command) > 0 {
		if prog := u.Command[0]; !strings.Contains(prog, "/") || filepath.IsAbs(prog) {
			if cause := checkProgram(prog, pathOf(u.Env), ""); cause != "" {
				out = append(out, Problem{Key: "user.command", Cause: cause})
			}
		}
	}
	for i, p := range c.Sandbox.ReadOnly {
		// Every reset binds it, and fails while it is not there.
		if _, err := os.Stat(p); err != nil {
			out = append(out, Problem{Key: fmt.Sprintf("sandbox.read_only[%d]", i),
				Cause: fmt.Sprintf("%s: %s; every reset would fail: create it or drop the entry", p, dirCause(err))})
		}
	}
	for i, r := range c.Rubrics {
		if r.Type != rubric.KindCommand || len(r.Command) == 0 {
			continue
		}
		// A relative path is the episode's workspace's: it may come from the
		// template, so it is known only at reset.
		if prog := r.Command[0]; !strings.Contains(prog, "/") || filepath.IsAbs(prog) {
			if cause := checkProgram(prog, pathOf(nil), ""); cause != "" {
				out = append(out, Problem{Key: fmt.Sprintf("rubrics[%d].command (rubric %q)", i, r.Name), Cause: cause})
			}
		}
	}
	return out
}

// pathOf is the PATH a program started with these extra variables gets:
// its own PATH if set, else the daemon's (PATH is in the allowlist).
func pathOf(env map[string]string) string {
	if p, ok := env["PATH"]; ok {
		return p
	}
	return os.Getenv("PATH")
}

// checkProgram resolves prog as process.Supervisor.Start would (a name
// without a slash through pathVar, a relative path from dir) and returns
// why it cannot be executed, or "" when it can.
func checkProgram(prog, pathVar, dir string) string {
	if prog == "" {
		return "the program is empty"
	}
	if dir != "" {
		// A server's directory that is not there fails its start as a
		// program "not found" (the chdir's ENOENT): say which it is.
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Sprintf("its dir %s is not a directory (%s); the server runs there: fix dir, which defaults to the configuration file's directory", dir, dirCause(err))
		}
	}
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		return executableCause(prog, p)
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && unix.Access(p, unix.X_OK) == nil {
			return ""
		}
	}
	if pathVar == "" {
		return fmt.Sprintf("program %q not found: PATH is empty (give an absolute path)", prog)
	}
	return fmt.Sprintf("program %q not found on PATH (%s); install it or give its path", prog, pathVar)
}

// executableCause says why the file at path (written prog in the
// configuration) cannot be executed, or "" when it can.
func executableCause(prog, path string) string {
	shown := prog
	if path != prog {
		shown = fmt.Sprintf("%s (%s)", prog, path)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("program %s does not exist", shown)
	case err != nil:
		return fmt.Sprintf("program %s: %v", shown, err)
	case fi.IsDir():
		return fmt.Sprintf("program %s is a directory", shown)
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("program %s is not a regular file (%s)", shown, fi.Mode().Type())
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return fmt.Sprintf("program %s is not executable (mode %s; chmod +x it)", shown, fi.Mode().Perm())
	}
	return ""
}

// CheckProgram says why prog (a stdio tool server's program, started with
// the extra variables env from dir) cannot be executed, or "" when it can:
// a bare name is looked up in the PATH it will get.
func CheckProgram(prog string, env map[string]string, dir string) string {
	return checkProgram(prog, pathOf(env), dir)
}

// dirCause says why a directory is not usable: stat's error, or that it
// is a file.
func dirCause(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it does not exist"
	case err != nil:
		return err.Error()
	}
	return "it is a file"
}
