package episode

import (
	"context"
	"testing"

	"github.com/harnessd/harnessd/config"
)

// TestASandboxWithoutToolsOpensNoBridgeDoor: a session with no tool
// server configured (none for the session, none per episode, no
// taskset) asks its sandboxes for no bridge door, which the init would
// otherwise open at the sandbox's start and at every recycle only for
// openTools to close it. The control: with a per-episode tool server
// configured the sandbox has the door.
func TestASandboxWithoutToolsOpensNoBridgeDoor(t *testing.T) {
	ctx := context.Background()
	for _, tools := range []bool{false, true} {
		e := sandboxEnv(t, 0)
		if tools {
			e.perEpisode = []config.ToolConfig{{Name: "x", Command: []string{"/bin/true"}}}
		}
		ep, err := Open(ctx, Spec{Env: e, ID: "a", Held: true}, LevelSandbox)
		if err != nil {
			t.Fatal(err)
		}
		if got := ep.sandbox.Door(doorMCP) != nil; got != tools {
			t.Errorf("tools configured %v: the sandbox has a bridge door: %v", tools, got)
		}
		if err := ep.Close(ctx); err != nil {
			t.Error(err)
		}
	}
}
