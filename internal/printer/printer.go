// Package printer renders harness events and observations for people, one
// line each, as `harnessd run`, `harnessd chat` and the demo print them.
package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/harnessd/harnessd/internal/termtext"
	"github.com/harnessd/harnessd/wire"
)

// Printer renders events and observations for people.
type Printer struct {
	w     io.Writer
	color bool
}

// New returns a Printer writing to w, in colour when w is a terminal and
// NO_COLOR is unset.
func New(w io.Writer) *Printer {
	color := false
	if f, ok := w.(*os.File); ok {
		color = term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == ""
	}
	return &Printer{w: w, color: color}
}

// Paint wraps s in an SGR colour code (e.g. "1" bold, "2" dim, "31" red)
// when colour is on.
func (p *Printer) Paint(code, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Clip shortens s to n runes, showing newlines as ⏎ and every other
// character a terminal would act on as an escape (termtext.Escape): a
// harness's text cannot move the cursor, erase or forge a line.
func Clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return termtext.Escape(s)
}

// Compact is v as one-line JSON.
func Compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Event prints one event on one line.
func (p *Printer) Event(e wire.Event) {
	var what string
	color := "0"
	switch d := e.Data.(type) {
	case *wire.ToolCall:
		color = "36"
		what = fmt.Sprintf("%s %s", d.ToolName, Clip(compactRaw(d.Arguments), 100))
	case *wire.ToolResult:
		color = "36"
		if d.Error != nil {
			what = fmt.Sprintf("%s ✗ %s", d.ToolName, Clip(*d.Error, 100))
		} else {
			what = fmt.Sprintf("%s → %s", d.ToolName, Clip(fmt.Sprint(d.Result), 100))
		}
	case *wire.TextOutput:
		what = Clip(d.Text, 120)
	case *wire.LLMChunk:
		color = "2"
		what = Clip(d.Content, 120)
	case *wire.Error:
		color = "31"
		what = Clip(d.Message, 160)
	case *wire.TurnComplete:
		color = "32"
		what = fmt.Sprintf("response=%q done=%v", Clip(d.Response, 100), d.Done)
		if d.Cancelled {
			what += " cancelled=true"
		}
	default:
		what = Clip(Compact(d), 120)
	}
	src := ""
	if e.Origin != "" {
		src = p.Paint("2", " ("+termtext.Escape(string(e.Origin))+")")
	}
	fmt.Fprintf(p.w, "  %s %-13s %s%s\n", p.Paint("2", fmt.Sprintf("[turn %d]", e.Turn)), p.Paint(color, termtext.Escape(string(e.Type))),
		termtext.Escape(what), src)
}

// compactRaw is JSON arguments as one line with sorted keys ({} when absent).
func compactRaw(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return "{}"
	}
	return Compact(v)
}

// Observation prints an observation's summary line, its rubric scores and
// any stderr tail.
func (p *Printer) Observation(label string, o *wire.Observation) {
	m := o.Metadata
	reward := "null"
	if o.Reward != nil {
		reward = fmt.Sprintf("%g", *o.Reward)
	}
	line := fmt.Sprintf("%s reward=%s done=%v", label, reward, o.Done)
	if m.Response != nil {
		line += fmt.Sprintf(" response=%q", Clip(*m.Response, 100))
	}
	if len(m.InjectedTools) > 0 {
		line += " tools=" + termtext.Escape(strings.Join(m.InjectedTools, ","))
	}
	if m.ErrorType != "" {
		line += p.Paint("31", fmt.Sprintf(" error_type=%s error=%q", m.ErrorType, Clip(m.Error, 160)))
		if m.Exit != nil {
			line += fmt.Sprintf(" exit=%s", m.Exit)
		}
	}
	fmt.Fprintln(p.w, p.Paint("1", line))
	for _, r := range m.RewardDetails {
		score := "—"
		if r.Score != nil {
			score = fmt.Sprintf("%g", *r.Score)
		}
		extra := ""
		if r.Error != "" {
			extra = p.Paint("31", " error: "+termtext.Escape(r.Error))
		}
		fmt.Fprintf(p.w, "    rubric %-12s score=%s weight=%g%s\n", termtext.Escape(r.Name), score, r.Weight, extra)
	}
	if m.StderrTail != "" {
		fmt.Fprintf(p.w, "    stderr tail: %s\n", Clip(m.StderrTail, 300))
	}
}
