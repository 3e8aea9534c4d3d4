package pty

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/vt"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Turn end rules recorded in TurnResult.Extra["turn_end"].
const (
	EndPrompt = "prompt"
	EndQuiet  = "quiet"
)

// Bracketed paste delimiters.
const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// echoMatcher recognises the program's echo of the message: the first
// lines of the turn, each ending with the next message line (after whatever
// prompt or continuation prompt precedes it). A blank message line matches a
// line without letters or digits (an empty line or a bare continuation
// prompt). Matching ends at the first line that differs.
type echoMatcher struct {
	msgLines []string
	echoed   int  // message lines matched so far
	done     bool // all matched, or a line differed
}

func (m *echoMatcher) match(line string) bool {
	if m.done {
		return false
	}
	want := strings.TrimRight(m.msgLines[m.echoed], " \t")
	got := strings.TrimRight(line, " ")
	ok := strings.HasSuffix(got, want)
	if want == "" {
		ok = strings.IndexFunc(got, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0
	}
	if !ok {
		m.done = true
		return false
	}
	m.echoed++
	if m.echoed == len(m.msgLines) {
		m.done = true
	}
	return true
}

// turnState follows one turn's output: which lines are the echo of the
// message, whether the program has answered, and the text of the turn.
type turnState struct {
	echo  echoMatcher
	strip bool     // drop echo lines
	armed bool     // output beyond the echo: a quiet period may end the turn
	text  []string // the turn's text lines, for the response
}

func newTurnState(msg string, strip bool) *turnState {
	lines := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	return &turnState{echo: echoMatcher{msgLines: lines}, strip: strip}
}

// consume takes the turn's settled lines, in order, and returns the text to
// report for them.
func (ts *turnState) consume(lines []string) []string {
	var out []string
	for _, l := range lines {
		if ts.echo.match(l) {
			if !ts.strip {
				out = append(out, l)
			}
			continue
		}
		ts.armed = true
		out = append(out, l)
	}
	ts.text = append(ts.text, out...)
	return out
}

// arm notes output beyond the echo in the rows not settled yet (window:
// complete rows above the cursor; pending: the cursor's row) once the
// program has moved to a new line since the submit.
func (ts *turnState) arm(window []string, pending string, newline bool) {
	if ts.armed || !newline {
		return
	}
	m := ts.echo
	for _, l := range window {
		if !m.match(l) {
			ts.armed = true
			return
		}
	}
	ts.armed = m.done && pending != ""
}

// Turn types the message and reads the terminal until the prompt returns or
// a quiet period passes.
func (a *Adapter) Turn(ctx context.Context, in harness.TurnInput, emit func(wire.Event)) (harness.TurnResult, error) {
	p := a.Process()
	a.mu.Lock()
	o, term := a.opts, a.term
	rows, cols := a.rows, a.cols
	early := a.early
	a.early = nil
	a.mu.Unlock()
	if p == nil {
		return harness.TurnResult{}, harness.Fail(wire.FailureHarnessExited, "harness is not started")
	}
	term.SetSize(int(rows), int(cols))
	for _, e := range early {
		emit(e)
	}
	if err := a.drain(ctx, p, term, emit, in.OutputLimit); err != nil {
		return harness.TurnResult{}, err
	}
	// The turn's text starts at the cursor's row.
	term.Settle()
	if lines := term.TakeLines(); len(lines) > 0 {
		emit(textEvent(strings.Join(lines, "\n")))
	}
	newlines := term.Newlines()

	a.mu.Lock()
	a.running, a.submitted, a.interrupted, a.held = true, false, false, false
	a.mu.Unlock()
	in.MarkLive() // an interrupt from here is held until the message is in
	defer func() {
		a.mu.Lock()
		a.running, a.submitted, a.held = false, false, false
		a.mu.Unlock()
	}()

	ts := newTurnState(in.Message, o.StripEcho)
	start := p.OutputBytes()
	wctx, cancelWrite := context.WithCancel(ctx)
	defer cancelWrite()
	written := make(chan error, 1)
	pasteOn := term.BracketedPaste() // read here: the loop below owns term
	go func() { written <- a.submit(wctx, p, pasteOn, in.Message) }()

	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	settle := time.NewTimer(time.Hour) // the rows above the cursor are reported when it fires
	settle.Stop()
	defer settle.Stop()
	// The rows above the cursor are copied only when something may have
	// changed (term.Generation), and for settle at most twice a period:
	// when it starts and when it fires. Copying them per chunk made a
	// program that keeps a big window unsettled cost the daemon the whole
	// window per byte it wrote.
	var shown []string  // the rows above the cursor when settle last started
	var shownGen uint64 // term's generation then
	settling := false   // settle runs
	gen := term.Generation()
	for {
		select {
		case err := <-written:
			written = nil
			if err != nil {
				if ctx.Err() != nil {
					return harness.TurnResult{}, ctx.Err()
				}
				return harness.TurnResult{}, a.dead(ctx, p, fmt.Sprintf("writing the message failed: %v", err))
			}
			a.mu.Lock()
			a.submitted = true
			held := a.held
			a.held = false
			a.mu.Unlock()
			if held {
				if err := p.Write(ctx, []byte(o.Interrupt)); err != nil && ctx.Err() != nil {
					return harness.TurnResult{}, ctx.Err()
				}
			}
		case chunk, ok := <-p.Output():
			if !ok {
				return harness.TurnResult{}, a.dead(ctx, p, "harness hung up its terminal mid-turn")
			}
			if in.OutputLimit > 0 && p.OutputBytes()-start > in.OutputLimit {
				return harness.TurnResult{}, harness.Fail(wire.FailureOutputLimit,
					"harness wrote more than %d bytes in one turn (episode.output_limit)", in.OutputLimit)
			}
			term.Write(chunk)
			answer(ctx, p, term)
			if out := ts.consume(term.TakeLines()); len(out) > 0 {
				emit(textEvent(strings.Join(out, "\n")))
			}
			changed := term.Generation() != gen
			gen = term.Generation()
			newline := term.Newlines() > newlines
			if o.Prompt != nil && newline && changed && promptAtCursor(o.Prompt, term) {
				before := term.BeforeCursor()
				if loc := o.Prompt.FindStringIndex(before); loc != nil {
					return a.finish(ts, term, before[:loc[0]], EndPrompt, emit), nil
				}
			}
			if !ts.armed && newline && changed {
				ts.arm(term.Window(), term.Pending(), newline)
			}
			if ts.armed && o.Quiet > 0 {
				quiet.Reset(o.Quiet)
			}
			if o.Settle > 0 && !settling && changed && term.WindowLen() > 0 {
				// Wait for the rows above the cursor to stay as they are
				// (a spinner on the cursor's row does not count).
				shown, shownGen, settling = term.Window(), gen, true
				settle.Reset(o.Settle)
			}
		case <-settle.C:
			settling = false
			if g := term.Generation(); g != shownGen {
				if w := term.Window(); len(w) > 0 && !slices.Equal(w, shown) {
					// Changed within the period: wait another.
					shown, shownGen, settling = w, g, true
					settle.Reset(o.Settle)
					continue
				}
			}
			shown = nil
			term.Settle()
			if out := ts.consume(term.TakeLines()); len(out) > 0 {
				emit(textEvent(strings.Join(out, "\n")))
			}
		case <-quiet.C:
			return a.finish(ts, term, "", EndQuiet, emit), nil
		case <-ctx.Done():
			return harness.TurnResult{}, ctx.Err()
		}
	}
}

// submit types the message, as a bracketed paste if it spans lines and the
// mode allows, then the submit sequence.
func (a *Adapter) submit(ctx context.Context, p *process.Process, pasteOn bool, msg string) error {
	o := a.opts
	b := msg
	if strings.Contains(msg, "\n") && (o.BracketedPaste == PasteAlways || o.BracketedPaste == PasteAuto && pasteOn) {
		b = pasteStart + msg + pasteEnd
	}
	if o.SubmitDelay > 0 && b != "" {
		if err := p.Write(ctx, []byte(b)); err != nil {
			return err
		}
		t := time.NewTimer(o.SubmitDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		b = ""
	}
	return p.Write(ctx, []byte(b+o.Submit))
}

// finish reports the turn's rows not reported yet and the cursor's row up
// to the prompt (at a quiet end: all of it, unless it is still echo), and
// builds the result.
func (a *Adapter) finish(ts *turnState, term *vt.Text, rest, end string, emit func(wire.Event)) harness.TurnResult {
	term.Settle()
	if out := ts.consume(term.TakeLines()); len(out) > 0 {
		emit(textEvent(strings.Join(out, "\n")))
	}
	if end == EndQuiet && ts.echo.done {
		rest = term.Pending()
	}
	if rest = strings.TrimRight(rest, " "); strings.TrimSpace(rest) != "" {
		emit(textEvent(rest))
		ts.text = append(ts.text, rest)
	}
	a.mu.Lock()
	cancelled := a.interrupted
	a.mu.Unlock()
	return harness.TurnResult{
		Response:  strings.Trim(strings.Join(ts.text, "\n"), "\n"),
		Cancelled: cancelled,
		Extra:     map[string]any{"turn_end": end},
	}
}

// promptTail is how much of the cursor line, before the cursor, the
// prompt is first matched against at each change of the terminal: a
// harness that alters a very long line a byte at a time would otherwise
// cost the daemon the line's whole length per byte. Only a match there is
// checked again against the whole line.
const promptTail = 512

// promptAtCursor says whether the prompt may end at the cursor: it matches
// the last promptTail characters before it.
func promptAtCursor(prompt *regexp.Regexp, term *vt.Text) bool {
	return prompt.MatchString(term.BeforeCursorTail(promptTail))
}

// drain reports output that arrived between turns, and notices a harness
// that is gone. It takes what is waiting, not what keeps coming: a harness
// that writes without pause would keep it reading, so it stops at the
// turn's context and at limit bytes (0: none), the turn's output_limit.
func (a *Adapter) drain(ctx context.Context, p *process.Process, term *vt.Text, emit func(wire.Event), limit int64) error {
	start := p.OutputBytes()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if limit > 0 && p.OutputBytes()-start > limit {
			return harness.Fail(wire.FailureOutputLimit, "harness wrote more than %d bytes between turns", limit)
		}
		select {
		case chunk, ok := <-p.Output():
			if !ok {
				f := a.dead(ctx, p, "harness hung up its terminal between turns")
				f.Type = wire.FailureHarnessExited
				return f
			}
			term.Write(chunk)
			answer(ctx, p, term)
			if lines := term.TakeLines(); len(lines) > 0 {
				emit(textEvent(strings.Join(lines, "\n")))
			}
		default:
			return nil
		}
	}
}

// dead describes a harness whose terminal hung up or stopped taking input.
func (a *Adapter) dead(ctx context.Context, p *process.Process, what string) *harness.Failure {
	st, exited := adapterkit.WaitExit(ctx, p)
	f := &harness.Failure{Type: wire.FailureHarnessCrashed, Message: what, StderrTail: vt.Strip(p.StderrTail())}
	if exited {
		f.Exit = &st
		f.Message = fmt.Sprintf("harness %s (%s)", st, what)
	}
	return f
}
