package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/wire"
)

// forkingHarness answers its first message after starting 200 background
// processes; dash ends on a fork its cgroup's pids limit refuses.
const forkingHarness = `#!/bin/sh
echo '{"type":"ready"}'
read -r line
i=0
while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done
echo '{"type":"turn_complete","data":{"response":"all started","done":false}}'
cat >/dev/null
`

// TestAHarnessThatDiesOfItsLimitIsAResourceLimit: a harness that dies of a
// limit of its sandbox's cgroup mid-turn ends the episode with
// resource_limit naming the limit and its knob, as documented, not
// harness_crashed: the adapter saw only an end of output and an exit
// status, and its crash was taken as it was (a newcomer's OOM kill under
// limits.memory was reported "harness killed by SIGKILL mid-turn"). The
// pids limit stands in for memory here (no OOM kill in a test). The
// control: the same harness under a limit it stays within answers.
func TestAHarnessThatDiesOfItsLimitIsAResourceLimit(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "harness.sh")
	if err := os.WriteFile(prog, []byte(forkingHarness), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pids    int
		control bool
	}{{512, true}, {32, false}} {
		s := sandboxed(t, func(cfg *config.Config) {
			cfg.Harness.Command = []string{prog}
			cfg.Limits.Pids = c.pids
		})
		reset(t, s)
		obs := step(t, s, "go")
		md := obs.Metadata
		if c.control {
			if md.ErrorType != "" || obs.ResponseText() != "all started" {
				t.Fatalf("control (limits.pids %d): %s %q", c.pids, md.ErrorType, md.Error)
			}
			continue
		}
		if md.ErrorType != wire.FailureResourceLimit || !strings.Contains(md.Error, "limits.pids") || md.Exit == nil {
			t.Errorf("limits.pids %d: error_type %s, error %q, exit %+v; want resource_limit naming limits.pids, with the exit status",
				c.pids, md.ErrorType, md.Error, md.Exit)
		}
	}
}
