package printer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/wire"
)

// TestHarnessTextCannotRewriteTheTerminal (an outside red team): the printer
// (harnessd run, the demo) writes a harness's text_output, a tool result's
// error and an observation's stderr tail with newlines shown as ⏎ but
// every other control character as it came: ESC[1A ESC[2K (cursor up,
// erase line) and a forged "reward=1" line overwrite what the daemon
// printed; OSC 52 sets the operator's clipboard where the terminal allows
// it. The control: the newline of the same text is neutralised.
func TestHarnessTextCannotRewriteTheTerminal(t *testing.T) {
	var b bytes.Buffer
	p := New(&b)
	forged := "x\n\x1b[1A\x1b[2K\rfinal reward=1 done=true\x1b]52;c;cm0gLXJmIH4K\x1b\\"
	p.Event(wire.Event{Type: wire.EventTextOutput, Turn: 1, Data: &wire.TextOutput{Text: forged}})
	p.Event(wire.Event{Type: wire.EventToolCall, Turn: 1, Data: &wire.ToolCall{ToolName: "t\x1b[2K"}})
	p.Observation("step", &wire.Observation{Metadata: wire.Metadata{StderrTail: forged, InjectedTools: []string{"u\x1b[1A"}}})
	out := b.String()
	t.Logf("%q", out)
	if !strings.Contains(out, "x⏎") {
		t.Fatalf("control: the newline was not shown as ⏎: %q", out)
	}
	for _, seq := range []string{"\x1b[1A", "\x1b[2K", "\x1b]52;"} {
		if strings.Contains(out, seq) {
			t.Errorf("the harness's %q reached the terminal raw", seq)
		}
	}
}
