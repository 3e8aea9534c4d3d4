package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// sandboxInitExe is the executable of the daemon's child that runs as a
// sandbox's init.
func sandboxInitExe(daemon int) (string, error) {
	// A child is listed under the thread that started it: read every
	// thread's list.
	var seen []string
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", daemon))
	if err != nil {
		return "", err
	}
	for _, task := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", daemon, task.Name()))
		for _, pid := range strings.Fields(string(kids)) {
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			args := strings.Split(string(cmdline), "\x00")
			seen = append(seen, strings.Join(args, " "))
			if len(args) > 1 && args[1] == "__sandbox-init" {
				if args[0] != "harnessd-sandbox-init" {
					return "", fmt.Errorf("the sandbox init's argv[0] is %q, want harnessd-sandbox-init", args[0])
				}
				return os.Readlink("/proc/" + pid + "/exe")
			}
		}
	}
	return "", fmt.Errorf("no sandbox init among the daemon's children: %q", seen)
}
