package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/bridge"
	"github.com/harnessd/harnessd/process"
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
// executable. A bare name is looked up in the PATH that program will get;
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

// CheckTools starts every tool server of cfg (as reset does, per-episode
// ones included), lists their tools, builds the catalog the harness would
// get (hiding and conflict rules applied), and reports each server that
// does not start or list its tools, a catalog conflict, and each tool
// rubric naming a tool that no server offers. A server whose program
// CheckPrograms rejects is neither started nor reported again. Everything it
// starts is stopped before it returns. Call it on a normalized Config.
func CheckTools(ctx context.Context, cfg *Config, sup *process.Supervisor, log *slog.Logger) []Problem {
	if log == nil {
		log = slog.Default()
	}
	var out []Problem
	var started []bridge.Source
	failed := map[string]bool{}
	defer func() {
		for _, src := range started {
			src.Close(context.WithoutCancel(ctx))
		}
	}()
	for i, tc := range cfg.Tools {
		if len(tc.Command) > 0 && checkProgram(tc.Command[0], pathOf(tc.Env), tc.Dir) != "" {
			failed[tc.Name] = true // CheckPrograms reports it
			continue
		}
		src := newToolSource(tc, cfg.Harness.StopGrace.D(), sup, log)
		key := fmt.Sprintf("tools[%d] (tool server %q)", i, tc.Name)
		if err := src.Start(ctx); err != nil {
			out = append(out, Problem{Key: key, Cause: "does not start: " + err.Error()})
			failed[tc.Name] = true
			src.Close(context.WithoutCancel(ctx))
			continue
		}
		started = append(started, src)
		if _, err := src.Tools(ctx); err != nil {
			out = append(out, Problem{Key: key, Cause: "does not list its tools: " + err.Error()})
			failed[tc.Name] = true
		}
	}
	var cat *bridge.Catalog
	var usable []bridge.Source
	for _, src := range started {
		if !failed[src.Name()] {
			usable = append(usable, src)
		}
	}
	if len(usable) > 0 {
		var err error
		cat, err = bridge.NewCatalog(ctx, usable, bridge.CatalogOptions{
			Builtins: cfg.Harness.BuiltinTools, Expose: cfg.Expose, Hide: cfg.Hide,
		})
		if err != nil {
			out = append(out, Problem{Key: "tools", Cause: err.Error()})
		}
	}
	for i, r := range cfg.Rubrics {
		if r.Type != rubric.KindTool {
			continue
		}
		if cat != nil {
			if _, ok := cat.Lookup(r.Tool); ok {
				continue
			}
		}
		key := fmt.Sprintf("rubrics[%d].tool (rubric %q)", i, r.Name)
		switch {
		case len(cfg.Tools) == 0:
			out = append(out, Problem{Key: key, Cause: fmt.Sprintf("names tool %q but no tool servers are configured", r.Tool)})
		case len(failed) > 0:
			out = append(out, Problem{Key: key, Cause: fmt.Sprintf("names tool %q, which no tool server that started offers (%d did not start)", r.Tool, len(failed))})
		default:
			out = append(out, Problem{Key: key, Cause: fmt.Sprintf("names tool %q, which no tool server offers (tools: %s)", r.Tool, toolNames(cat))})
		}
	}
	return out
}

// toolNames lists a catalog's tools, hidden ones included.
func toolNames(cat *bridge.Catalog) string {
	if cat == nil {
		return "none"
	}
	var names []string
	for _, e := range cat.Entries() {
		names = append(names, e.Served)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
