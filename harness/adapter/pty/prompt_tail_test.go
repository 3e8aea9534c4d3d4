package pty

import (
	"context"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// A prompt at the end of a line longer than promptTail still ends the
// turn: the tail finds it, the whole line confirms it.
func TestPromptAtTheEndOfALongLineEndsTheTurn(t *testing.T) {
	script := `printf 'ready> '; read line
printf '\r\n'
head -c 9000 /dev/zero | tr '\0' x
printf 'ready> '
read line`
	a := start(t, launch(t, map[string]any{"prompt": `ready> $`}, nil, "bash", "--norc", "--noprofile", "-c", script))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) {})
	if err != nil || res.Extra["turn_end"] != EndPrompt {
		t.Fatalf("turn: %v, ended by %v; want the prompt", err, res.Extra["turn_end"])
	}
}
