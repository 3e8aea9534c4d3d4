package jsonl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/wire"
)

// forkShapeScript is a line-protocol harness that, asked to fork, first
// writes a text_output line with an array of n+1 zeros under a field of
// its own, then its fork state; every message it answers "ok".
const forkShapeScript = `#!/bin/sh
echo '{"type":"ready"}'
while IFS= read -r line; do
	case "$line" in
	*'"type":"fork"'*)
		id=$(printf '%s' "$line" | sed 's/.*"id":"\([^"]*\)".*/\1/')
		printf '{"type":"text_output","data":{"text":"between turns","pad":['
		yes '0,' | head -n "$N" | tr -d '\n'
		printf '0]}}\n'
		printf '{"type":"fork_state","id":"%s","state":{}}\n' "$id"
		;;
	*) echo '{"type":"turn_complete","data":{"response":"ok"}}' ;;
	esac
done
`

// A line the harness writes between turns, while it is asked to fork, is
// handled in its next turn as if written then: a line of more than
// adapterkit.MaxLineValues JSON values fails that turn with output_limit,
// as it does when written during a turn (CheckOutput). It was handled
// unchecked. The control: a line of 1,000 values is handled and the turn
// ends normally.
func TestALineOfManyValuesWrittenWhileForkingFailsTheNextTurn(t *testing.T) {
	script := filepath.Join(t.TempDir(), "harness.sh")
	if err := os.WriteFile(script, []byte(forkShapeScript), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		values string
		fails  bool
	}{{"1000", false}, {"70000", true}} {
		l := adaptertest.Launch(t, script)
		l.Env = append(l.Env, "N="+c.values)
		a := New()
		if err := a.Start(context.Background(), l); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Stop(context.Background()) })
		if _, err := forkState(t, a); err != nil {
			t.Fatalf("%s values: fork: %v", c.values, err)
		}
		res, _, err := turn(t, a, 1, "go on")
		f, _ := harness.AsFailure(err)
		switch {
		case c.fails && (f == nil || f.Type != wire.FailureOutputLimit):
			t.Errorf("a line of %s values written while forking: the next turn gave %+v, %v; want output_limit", c.values, res, err)
		case !c.fails && (err != nil || res.Response != "ok"):
			t.Errorf("control, a line of %s values written while forking: %+v, %v", c.values, res, err)
		}
	}
}
