// Package initfile owns the small sandbox init embedded in harnessd
// (cmd/harnessd-sandbox-init, with build tag harnessd_embedinit) and the
// file it is written to for execution. It must not know what the init does
// or how the sandbox talks to it: package sandbox asks it for a path.
package initfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitEnv names the environment variable that, set to "self", makes a
// binary with the embedded init re-execute itself as the init instead (for
// comparing the two, and as an escape hatch).
const InitEnv = "HARNESSD_SANDBOX_INIT"

// embeddedInit is the small init binary (cmd/harnessd-sandbox-init) when
// this binary was built with it (build tag harnessd_embedinit, as the
// Makefile builds harnessd); nil otherwise, and then the init is this
// binary re-executed.
var embeddedInit []byte

// initFile is where the embedded init was written, made on first use.
var initFile struct {
	mu   sync.Mutex
	path string
	err  error
}

// Path is the init a sandbox without a configured one starts: the
// embedded small init, written once to a file of the daemon's own (see
// writeInitFile), when there is one; else /proc/self/exe. A failure to
// write it falls back to /proc/self/exe: slower, never wrong.
//
// A sealed memfd would need no file, but the init must be executed after
// the clone has switched to the sandbox's ids (as root: inside 0, a host id
// of the private range), and a process whose ids changed is no longer
// dumpable, so /proc/self/fd/N of the memfd is closed to it.
func Path() string {
	if len(embeddedInit) == 0 || os.Getenv(InitEnv) == "self" {
		return "/proc/self/exe"
	}
	initFile.mu.Lock()
	defer initFile.mu.Unlock()
	if initFile.path != "" {
		if _, err := os.Lstat(initFile.path); err == nil {
			return initFile.path
		}
		// Removed under us (a tmp cleaner): write it again.
	}
	initFile.path, initFile.err = placeInitFile(embeddedInit, initDirCandidates())
	if initFile.err != nil {
		initFile.path = ""
		return "/proc/self/exe"
	}
	return initFile.path
}

// Status reports the small init sandboxes start ("" when they
// re-execute this binary: built without it, or HARNESSD_SANDBOX_INIT=self)
// and, when it exists but could not be written, why.
func Status() (string, error) {
	if len(embeddedInit) == 0 || os.Getenv(InitEnv) == "self" {
		return "", nil
	}
	p := Path()
	initFile.mu.Lock()
	defer initFile.mu.Unlock()
	if initFile.err != nil {
		return "", initFile.err
	}
	return p, nil
}

// initDirCandidates are the directories the init file may go under, in
// order: $TMPDIR, then the system's.
func initDirCandidates() []string {
	return []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"}
}

// placeInitFile writes bin under the first candidate the sandbox's ids can
// execute a file from (see execReachable).
func placeInitFile(bin []byte, candidates []string) (string, error) {
	var why []error
	for _, dir := range candidates {
		if err := execReachable(dir); err != nil {
			why = append(why, err)
			continue
		}
		p, err := writeInitFile(bin, dir)
		if err == nil {
			return p, nil
		}
		why = append(why, err)
	}
	return "", fmt.Errorf("no directory to put the sandbox init in: %w", errors.Join(why...))
}

// execReachable checks that another uid could execute a file under dir:
// dir and every directory above it are traversable by others (a 0700
// $TMPDIR is not), and its file system is not mounted noexec.
func execReachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("sandbox init: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox init: %s is not traversable by the sandbox's ids (%v)", d, fi.Mode().Perm())
		}
		if d == "/" {
			break
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(abs, &st); err != nil {
		return fmt.Errorf("sandbox init: statfs %s: %w", abs, err)
	}
	if st.Flags&unix.ST_NOEXEC != 0 {
		return fmt.Errorf("sandbox init: %s is on a noexec file system", abs)
	}
	return nil
}

// writeInitFile puts bin at tmp/harnessd-init-UID/init-HASH, a read-only
// (0555) file in a directory only this uid may write (0711: the sandbox's
// ids may traverse it, not list it), named by its content's hash so that
// daemons of one build share it and a daemon killed leaves no new file
// behind. An existing directory or file is trusted only when it is this
// uid's, not a link, writable by nobody else, and (the file) holds exactly
// bin.
func writeInitFile(bin []byte, tmp string) (string, error) {
	dir := filepath.Join(tmp, fmt.Sprintf("harnessd-init-%d", os.Geteuid()))
	switch err := os.Mkdir(dir, 0o711); {
	case err == nil:
		if err := os.Chmod(dir, 0o711); err != nil { // whatever the umask
			return "", fmt.Errorf("sandbox init directory: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return "", fmt.Errorf("sandbox init directory: %w", err)
	}
	if err := ownedNotShared(dir, true); err != nil {
		return "", err
	}
	sum := sha256.Sum256(bin)
	path := filepath.Join(dir, "init-"+hex.EncodeToString(sum[:12]))
	if err := ownedNotShared(path, false); err == nil {
		if got, err := os.ReadFile(path); err == nil && sha256.Sum256(got) == sum {
			return path, nil
		}
	}
	f, err := os.CreateTemp(dir, ".init-*")
	if err != nil {
		return "", fmt.Errorf("write the sandbox init: %w", err)
	}
	defer os.Remove(f.Name()) // nothing once renamed
	_, werr := f.Write(bin)
	cerr := f.Chmod(0o555)
	if err := errors.Join(werr, cerr, f.Close()); err != nil {
		return "", fmt.Errorf("write the sandbox init: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("write the sandbox init: %w", err)
	}
	return path, nil
}

// ownedNotShared checks that path is a directory (dir) or regular file of
// this uid, not a link, and writable by no one else.
func ownedNotShared(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return fmt.Errorf("sandbox init: %s: no owner", path)
	case dir && !fi.IsDir(), !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("sandbox init: %s is a %v, not what harnessd made", path, fi.Mode().Type())
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("sandbox init: %s belongs to uid %d, not this daemon's %d", path, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("sandbox init: %s is writable by others (%v)", path, fi.Mode().Perm())
	}
	return nil
}
