// Package pty is the adapter for harnesses that only have an interactive
// terminal UI: it runs the harness in a pseudo-terminal and types each turn's
// message into it, as a user would.
//
// A turn writes the message (a multi-line message as a bracketed paste when
// the program enabled that mode) and the submit key sequence, then reads the
// terminal until the turn ends by one of two rules, whichever fires first;
// TurnResult.Extra["turn_end"] records which:
//
//   - "prompt": the prompt pattern matches the cursor line up to the cursor,
//     at its end (the program waits for input right after its prompt), after
//     the program has moved to a new line since the message was submitted;
//   - "quiet": the quiet period has passed without output, after the program
//     wrote something other than the echo of the message.
//
// Terminal output becomes text_output events with control sequences removed
// and carriage returns applied (package internal/vt); the echo of the message
// is dropped unless strip_echo is false. A row is reported when it scrolls
// off the screen, when the rows above the cursor have stayed unchanged for
// settle (default 250ms; a spinner on the cursor's row does not count; they
// are compared once a period, so they are reported one to two periods
// after their last change), so
// a turn's text is seen while the turn runs, or at the turn's end; settle 0
// is for a program that redraws rows above its cursor after a pause, whose
// redraw would read as new rows. The response is the text of the
// turn without the echo and without the final prompt. The adapter answers the
// terminal queries a real terminal answers (cursor position, device status and
// attributes). The rows printed before the program is ready are the first
// turn's first text_output event; a program that writes more than the
// launch's output limit (episode.output_limit) to its terminal before it is
// ready, or whose rows kept by then come to more, fails start-up
// (startup_failed, naming the knob). Interrupt types the interrupt key (Ctrl-C); the turn then ends
// by its usual rules and reports Cancelled. Output beyond the turn's limit is
// an output_limit failure; the terminal hanging up or the program exiting
// mid-turn is harness_crashed with the exit status and the (stripped) tail of
// the terminal. Stop kills the whole session, including job-control groups.
//
// The adapter owns the harness's terminal and its line model. It must not
// touch the harness's files or configuration (a pty harness gets the bridge
// through HARNESSD_MCP_* variables or a preset), and it starts processes only
// through package process.
package pty
