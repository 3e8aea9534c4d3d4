package pty

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// Guards the prompt's tail match (2518bc3) at the adapter and what it
// keeps correct. The prompt is first matched against the cursor line's
// last promptTail characters; a match there is confirmed against the whole
// line, and the turn's text is cut from the whole line:
//   - a prompt at the end of a 20,000-character line (multi-byte
//     characters in it) ends the turn, and the response is the whole line
//     before the prompt, not the tail's part of it (fails if the tail is
//     not the line's end, or if the response is cut from the tail);
//   - a pattern that matches the tail but not the whole line (anchored at
//     the line's start: the tail's start is not the line's) does not end
//     the turn, which ends by its quiet period instead (fails if a tail
//     match alone ended the turn).
func TestPromptTailIsConfirmedAgainstTheWholeLine(t *testing.T) {
	run := func(t *testing.T, opts map[string]any, script string) (harness.TurnResult, error) {
		t.Helper()
		a := start(t, launch(t, opts, nil, "bash", "--norc", "--noprofile", "-c", script))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return a.Turn(ctx, harness.TurnInput{Number: 1, Message: "go", OutputLimit: 16 << 20}, func(wire.Event) {})
	}
	t.Run("long line", func(t *testing.T) {
		// 4,000 x "abcdé" = 20,000 characters, 24,000 bytes.
		line := strings.Repeat("abcdé", 4000)
		res, err := run(t, map[string]any{"prompt": `ready> `},
			`printf 'ready> '; read line; for i in $(seq 4000); do printf 'abcdé'; done; printf 'ready> '; read line`)
		if err != nil || res.Extra["turn_end"] != EndPrompt {
			t.Fatalf("turn: %v, ended by %v; want the prompt", err, res.Extra["turn_end"])
		}
		if res.Response != line {
			t.Errorf("response: %d characters ending %q, want the whole line before the prompt (%d characters)",
				utf8.RuneCountInString(res.Response), res.Response[max(len(res.Response)-40, 0):], utf8.RuneCountInString(line))
		}
	})
	t.Run("tail-only match", func(t *testing.T) {
		// The start-up prompt is "x> ", which the pattern matches as a
		// whole line; the turn's line is "y" and 600 x's before "> ":
		// its last 512 characters match ^x+> , the whole line does not.
		res, err := run(t, map[string]any{"prompt": `^x+> `, "quiet": "1s"},
			`printf 'x> '; read line; printf y; head -c 600 /dev/zero | tr '\0' x; printf '> '; read line`)
		if err != nil || res.Extra["turn_end"] != EndQuiet {
			t.Fatalf("turn: %v, ended by %v (response %.40q…); want its quiet period: the whole line does not match the prompt",
				err, res.Extra["turn_end"], res.Response)
		}
	})
}
