package process

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/process/internal/cgtree"
)

// helperEnv selects a helper mode of the test binary (see TestMain).
const helperEnv = "PROCESS_TEST_HELPER"

// runHelper handles the helper modes of the test binary; ok is false when
// this process is a normal test run.
func runHelper() (code int, ok bool) {
	switch os.Getenv(helperEnv) {
	case "":
		return 0, false
	case "emfile":
		return emfileHelper(), true
	case "supervise":
		return superviseHelper(), true
	}
	os.Stderr.WriteString("unknown helper mode\n")
	return 2, true
}

// emfileHelper lowers RLIMIT_NOFILE to just above the descriptors already
// open, starts a process (which needs six more) and prints the error.
func emfileHelper() int {
	s, err := NewSupervisor(Options{Subreaper: ModeOff})
	if err != nil {
		os.Stderr.WriteString("supervisor: " + err.Error() + "\n")
		return 2
	}
	defer s.Close(context.Background(), 0)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	lim := unix.Rlimit{Cur: uint64(len(fds) + 2), Max: uint64(len(fds) + 2)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		os.Stderr.WriteString("setrlimit: " + err.Error() + "\n")
		return 2
	}
	_, err = s.Start(Spec{Path: "/bin/true", Env: DefaultEnviron(nil)})
	if err == nil {
		os.Stdout.WriteString("started\n")
		return 0
	}
	os.Stdout.WriteString("emfile=" + strconv.FormatBool(errors.Is(err, syscall.EMFILE)) + "\n" + err.Error() + "\n")
	return 0
}

func wantSpawnError(t *testing.T, err error, parts ...string) {
	t.Helper()
	var se *StartError
	if !errors.As(err, &se) || se.Reason != FailSpawn {
		t.Fatalf("err = %v, want spawn StartError", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
	if strings.Contains(err.Error(), "already started") {
		t.Fatalf("error %q: a Cmd was started twice", err)
	}
}

func TestStartNULByteSaysSo(t *testing.T) {
	s := newSup(t, Options{})
	for _, c := range []struct {
		name string
		spec Spec
		says string
	}{
		{"argument", Spec{Path: "/bin/true", Args: []string{"ok", "a\x00b"}}, "argument 2 contains a NUL byte"},
		{"environment", Spec{Path: "/bin/true", Env: []string{"HARNESSD_EPISODE_ID=ep\x00x"}}, `environment variable "HARNESSD_EPISODE_ID" contains a NUL byte`},
		{"program", Spec{Path: "/bin/tr\x00ue"}, "program path contains a NUL byte"},
		{"directory", Spec{Path: "/bin/true", Dir: "/tmp\x00"}, "working directory contains a NUL byte"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Start(c.spec)
			wantSpawnError(t, err, c.says)
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("err = %v, want ErrInvalidSpec", err)
			}
		})
	}
	if s.Live() != 0 {
		t.Fatal("failed starts still tracked")
	}
}

func TestStartNamesMissingOrUnexecutableProgram(t *testing.T) {
	s := newSup(t, Options{})
	dir := t.TempDir()
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path  string
		says  string
		errno error
	}{
		{"/nonexistent/harness", `program "/nonexistent/harness" not found`, syscall.ENOENT},
		{"no-such-program-anywhere", `program "no-such-program-anywhere" not found`, exec.ErrNotFound},
		{plain, `program "` + plain + `" not executable`, syscall.EACCES},
	}
	for _, c := range cases {
		_, err := s.Start(Spec{Path: c.path, Env: DefaultEnviron(nil)})
		wantSpawnError(t, err, c.says)
		if !errors.Is(err, c.errno) {
			t.Fatalf("err = %v, want %v in the chain", err, c.errno)
		}
	}
}

// A start refused by CLONE_INTO_CGROUP is retried without the cgroup from a
// fresh exec.Cmd (a second Start of one Cmd fails with "already started").
func TestStartRetriesWithoutCgroupOnFreshCmd(t *testing.T) {
	s := newSup(t, Options{Cgroup: ModeOff})
	// A plain directory posing as the daemon's cgroup: its leaves open
	// fine, but the kernel refuses to clone into them.
	s.cg = cgtree.At(t.TempDir())
	p, err := s.Start(Spec{Path: "/bin/sh", Args: []string{"-c", "exit 7"}, Env: DefaultEnviron(nil)})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer p.Stop(context.Background(), 0)
	if p.KillMode() == "cgroup" {
		t.Fatal("tree claims a cgroup the kernel refused")
	}
	st, err := p.Wait(context.Background())
	if err != nil || st != (ExitStatus{Code: 7}) {
		t.Fatalf("exit = %v, %v; want code 7", st, err)
	}
	s.cg = nil // nothing of the fake parent to remove
}

func TestStartTooManyOpenFiles(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=emfile")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, "emfile=true") || !strings.Contains(got, "too many open files") {
		t.Fatalf("helper said %q, want an EMFILE start error saying too many open files", got)
	}
	if strings.Contains(got, "cgroup") {
		t.Fatalf("helper said %q: EMFILE taken for a cgroup error", got)
	}
}
