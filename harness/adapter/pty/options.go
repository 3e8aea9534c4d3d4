package pty

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/units"
)

// Defaults of the options.
const (
	DefaultRows      = 40
	DefaultCols      = 120
	DefaultSubmit    = "\r"
	DefaultInterrupt = "\x03"
	DefaultTerm      = "xterm-256color"
	// DefaultQuiet is the quiet period used when no prompt pattern is set.
	DefaultQuiet = 2 * time.Second
	// DefaultSettle is how long the terminal stays quiet before the rows
	// above the cursor are reported, within a turn.
	DefaultSettle = 250 * time.Millisecond
)

// PasteMode says when a multi-line message is sent as a bracketed paste.
type PasteMode string

// Paste modes.
const (
	// PasteAuto (option true, the default) wraps multi-line messages in
	// ESC[200~ … ESC[201~ when the program has enabled bracketed paste
	// mode (ESC[?2004h), as a real terminal does.
	PasteAuto PasteMode = "auto"
	// PasteAlways wraps multi-line messages even if the program never
	// enabled the mode.
	PasteAlways PasteMode = "always"
	// PasteNever sends messages as typed: every newline is an Enter.
	PasteNever PasteMode = "never"
)

// UnmarshalJSON accepts true (auto), false (never), "auto", "always" and "never".
func (m *PasteMode) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v {
	case true, "auto":
		*m = PasteAuto
	case false, "never":
		*m = PasteNever
	case "always":
		*m = PasteAlways
	default:
		return fmt.Errorf("bracketed_paste must be true, false or \"always\", not %s", b)
	}
	return nil
}

// Options are the pty adapter's harness.options.
type Options struct {
	// Rows and Cols size the terminal.
	Rows, Cols uint16
	// Prompt marks "ready for input": it must match the cursor line up to
	// the cursor, at its end, and its last 512 characters alone (a
	// pattern needing more of a longer line, such as one anchored at the
	// line's start, does not match there). Nil when not configured.
	Prompt *regexp.Regexp
	// Ready marks the end of start-up, searched in all text so far; nil
	// means the prompt (or, without one, the first quiet period).
	Ready *regexp.Regexp
	// Quiet ends a turn when the program has written output and then
	// nothing for this long; 0 disables it.
	Quiet time.Duration
	// Submit is written after the message.
	Submit string
	// SubmitDelay is waited between the message and Submit (some TUIs take
	// a fast Enter after a paste for part of the paste).
	SubmitDelay time.Duration
	// BracketedPaste is the paste mode of multi-line messages.
	BracketedPaste PasteMode
	// StripEcho drops the program's echo of the message from the turn's
	// text events and response.
	StripEcho bool
	// Interrupt is written by Interrupt.
	Interrupt string
	// Term is the TERM given to the program.
	Term string
	// Settle reports the rows above the cursor as text_output events once
	// the program has written nothing for this long within a turn, so that
	// a turn's text is seen as it comes; 0 keeps them until they scroll off
	// the screen or the turn ends (for a program that redraws rows above
	// its cursor, whose redraw would then read as new rows).
	Settle time.Duration
}

// wireOptions is the YAML/JSON shape of Options.
type wireOptions struct {
	Rows           uint16          `json:"rows"`
	Cols           uint16          `json:"cols"`
	Prompt         string          `json:"prompt"`
	Ready          string          `json:"ready"`
	Quiet          units.Duration  `json:"quiet"`
	Submit         *string         `json:"submit"`
	SubmitDelay    units.Duration  `json:"submit_delay"`
	BracketedPaste *PasteMode      `json:"bracketed_paste"`
	StripEcho      *bool           `json:"strip_echo"`
	Interrupt      *string         `json:"interrupt"`
	EnvTerm        *string         `json:"env_term"`
	Settle         *units.Duration `json:"settle"`
}

// ParseOptions decodes and validates harness.options strictly (unknown keys
// are errors) and applies defaults.
func ParseOptions(m map[string]any) (*Options, error) {
	var w wireOptions
	if err := kit.DecodeOptions(m, &w); err != nil {
		return nil, err
	}
	o := &Options{
		Rows: w.Rows, Cols: w.Cols,
		Quiet: w.Quiet.D(), SubmitDelay: w.SubmitDelay.D(),
		Submit: DefaultSubmit, BracketedPaste: PasteAuto, StripEcho: true,
		Interrupt: DefaultInterrupt, Term: DefaultTerm, Settle: DefaultSettle,
	}
	var errs []error
	if o.Rows == 0 {
		o.Rows = DefaultRows
	}
	if o.Cols == 0 {
		o.Cols = DefaultCols
	}
	if w.Prompt != "" {
		re, err := regexp.Compile(`(?:` + w.Prompt + `)\z`)
		if err != nil {
			errs = append(errs, fmt.Errorf("harness.options.prompt: %w", err))
		}
		o.Prompt = re
	}
	if w.Ready != "" {
		re, err := regexp.Compile(w.Ready)
		if err != nil {
			errs = append(errs, fmt.Errorf("harness.options.ready: %w", err))
		}
		o.Ready = re
	}
	if w.Settle != nil {
		o.Settle = w.Settle.D()
	}
	if o.Quiet < 0 || o.SubmitDelay < 0 || o.Settle < 0 {
		errs = append(errs, errors.New("harness.options: quiet, submit_delay and settle must not be negative"))
	}
	if o.Prompt == nil && o.Quiet == 0 {
		o.Quiet = DefaultQuiet
	}
	if w.Submit != nil {
		o.Submit = *w.Submit
	}
	if w.BracketedPaste != nil {
		o.BracketedPaste = *w.BracketedPaste
	}
	if w.StripEcho != nil {
		o.StripEcho = *w.StripEcho
	}
	if w.Interrupt != nil {
		o.Interrupt = *w.Interrupt
	}
	if w.EnvTerm != nil {
		o.Term = *w.EnvTerm
	}
	if o.Interrupt == "" {
		errs = append(errs, errors.New("harness.options.interrupt must not be empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}
