// Package program finds the harness's program inside a sandbox, in the
// PATH of the environment the harness gets, and words why executing it
// failed. A sandbox's init (process/sandbox) uses it after the pivot into
// the sandbox's root; it touches no process state.
package program

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ExecError explains why executing prog failed, naming the program.
func ExecError(prog string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("program %q not found in the sandbox: %w", prog, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("program %q not executable in the sandbox (permission denied): %w", prog, err)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("program %q is not an executable format: %w", prog, err)
	}
	return fmt.Errorf("execute %q: %w", prog, err)
}

// Look finds prog in env's PATH (not the caller's own: the init's is
// empty), /usr/local/bin:/usr/bin:/bin when env sets none.
func Look(prog string, env []string) (string, error) {
	if strings.Contains(prog, "/") {
		return prog, nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q not found in the sandbox's PATH (%s): %w", prog, pathVar, syscall.ENOENT)
}
