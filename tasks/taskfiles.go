package tasks

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// maxTaskTOMLBytes bounds task.toml.
const maxTaskTOMLBytes = 1 << 20

// readTaskFile reads the file p of the task directory dir as the daemon
// reads a task's own files (task.toml, instruction.md, a Dockerfile):
// beneath dir (os.Root: a link out of the task directory, on the way or
// at the end, is refused, so a task cannot have the daemon read a host
// file into its instruction), only a regular file (opened without
// blocking, so a FIFO cannot wedge the load), and at most max bytes (a
// larger file is an error after max+1 bytes, never read whole).
func readTaskFile(dir, p string, max int64) ([]byte, error) {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, max)
	}
	return b, nil
}

// beneathDir reports an error unless the path p, its links resolved, lies
// in dir (its links resolved too): what the daemon copies of a task (a
// COPY source, tests/, solution/, a step's workdir/) must be the task's
// own files, as a Docker build resolves its sources within the build
// context, not a host directory a link in the task leads to.
func beneathDir(dir, p string) error {
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	rp, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	if !within(rp, rd) {
		rel, _ := filepath.Rel(dir, p)
		return fmt.Errorf("%s leads out of %s (to %s)", rel, filepath.Base(dir), rp)
	}
	return nil
}

// checkBeneath refuses a Harbor task (directory dir) whose directories
// the daemon copies lead out of dir.
func (t *Task) checkBeneath(dir string) []error {
	var errs []error
	check := func(p string) {
		if p != "" {
			errs = appendErr(errs, beneathDir(dir, p))
		}
	}
	check(t.testsDir)
	check(t.solutionDir)
	for _, s := range t.Steps {
		check(s.testsDir)
		check(s.solutionDir)
		check(s.workdirDir)
	}
	for _, c := range t.copies {
		check(c.src)
	}
	return errs
}
