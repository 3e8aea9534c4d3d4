package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RelativeHarnessArgs reports each argument of harness.command (after the
// program) that is a relative path naming a file or directory in dir — the
// configuration file's directory, or the daemon's working directory for a
// command given on the command line — but not in workspace.template: the
// harness runs in its episode's fresh workspace, where such an argument
// names nothing ("python3 agent.py" ends every episode with
// startup_failed: can't open file '/run/harnessd/workspace/agent.py').
// where says in the message what dir is. Without a template, a taskset
// may still put the file into the workspace, so these are warnings.
func (c *Config) RelativeHarnessArgs(dir, where string) []Problem {
	var out []Problem
	cmd := c.Harness.Command
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		if a == "" || filepath.IsAbs(a) || strings.HasPrefix(a, "-") || a == "." || a == ".." || dir == "" {
			continue
		}
		p := filepath.Join(dir, a)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if t := c.Workspace.Template; t != "" {
			if _, err := os.Stat(filepath.Join(t, a)); err == nil {
				continue
			}
		}
		out = append(out, Problem{Key: fmt.Sprintf("harness.command[%d]", i), Cause: fmt.Sprintf(
			"%q is a relative path, and the harness runs in its episode's workspace, where it names nothing; "+
				"%s it names %s: give that absolute path, or copy it into every workspace with workspace.template",
			a, where, p)})
	}
	return out
}
