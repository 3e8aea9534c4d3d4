package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/client"
)

// TestSandboxStartsTheSmallInit: a sandbox's init (the daemon's child in
// the sandbox's namespaces) is the small embedded init written to
// harnessd-init-UID, not the daemon's own binary; the control is the same
// daemon with HARNESSD_SANDBOX_INIT=self, whose init is the daemon binary.
func TestSandboxStartsTheSmallInit(t *testing.T) {
	needSandbox(t)
	for _, tc := range []struct {
		name string
		env  []string
		want func(exe string) bool
	}{
		{"embedded", nil, func(exe string) bool {
			return strings.HasPrefix(filepath.Base(filepath.Dir(exe)), "harnessd-init-") && strings.HasPrefix(filepath.Base(exe), "init-")
		}},
		{"self (control)", []string{"HARNESSD_SANDBOX_INIT=self"}, func(exe string) bool {
			self, _ := filepath.EvalSymlinks(harnessdBin(t))
			return exe == self
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, spec{Flags: []string{"--isolation", "sandbox"}, Env: tc.env, Harness: agentCmd(t)})
			defer d.Stop()
			env, err := client.Dial(context.Background(), d.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			if _, err := env.Reset(context.Background(), client.ResetOptions{}); err != nil {
				t.Fatal(err)
			}
			exe, err := sandboxInitExe(d.Pid())
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(exe) {
				t.Fatalf("the sandbox's init runs %s", exe)
			}
		})
	}
}

// sandboxInitExe is the executable of the process that runs as a
// sandbox's init: a child of the daemon's sandbox spawner, which runs the
// same binary (checked too).
func sandboxInitExe(daemon int) (string, error) {
	var seen []string
	for _, spawner := range childPids(daemon) {
		args := cmdline(spawner)
		seen = append(seen, strings.Join(args, " "))
		if len(args) < 2 || args[1] != "__sandbox-spawner" {
			continue
		}
		spawnerExe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", spawner))
		if err != nil {
			return "", err
		}
		for _, pid := range childPids(spawner) {
			args := cmdline(pid)
			seen = append(seen, strings.Join(args, " "))
			if len(args) > 1 && args[1] == "__sandbox-init" {
				if args[0] != "harnessd-sandbox-init" {
					return "", fmt.Errorf("the sandbox init's argv[0] is %q, want harnessd-sandbox-init", args[0])
				}
				exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
				if err == nil && exe != spawnerExe {
					err = fmt.Errorf("the init runs %s, its spawner %s", exe, spawnerExe)
				}
				return exe, err
			}
		}
	}
	return "", fmt.Errorf("no sandbox init among the children of the daemon's spawner: %q", seen)
}

// childPids lists pid's children (a child is listed under the thread that
// started it: every thread's list is read).
func childPids(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(kids)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func cmdline(pid int) []string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
