package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/harnessd/harnessd/harness"
)

// printer renders events and observations for people.
type printer struct {
	w     io.Writer
	color bool
}

func newPrinter(w io.Writer) *printer {
	color := false
	if f, ok := w.(*os.File); ok {
		color = term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == ""
	}
	return &printer{w: w, color: color}
}

func (p *printer) paint(code, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// event prints one event on one line.
func (p *printer) event(e harness.Event) {
	d := e.Data
	var what string
	color := "0"
	switch e.Type {
	case harness.EventToolCall:
		color = "36"
		what = fmt.Sprintf("%v %s", d["tool_name"], clip(compact(d["arguments"]), 100))
	case harness.EventToolResult:
		color = "36"
		if d["error"] != nil {
			what = fmt.Sprintf("%v ✗ %s", d["tool_name"], clip(fmt.Sprint(d["error"]), 100))
		} else {
			what = fmt.Sprintf("%v → %s", d["tool_name"], clip(fmt.Sprint(d["result"]), 100))
		}
	case harness.EventTextOutput:
		what = clip(fmt.Sprint(d["text"]), 120)
	case harness.EventLLMChunk:
		color = "2"
		what = clip(fmt.Sprint(d["content"]), 120)
	case harness.EventError:
		color = "31"
		what = clip(fmt.Sprint(d["message"]), 160)
	case harness.EventTurnComplete:
		color = "32"
		what = fmt.Sprintf("response=%q done=%v", clip(fmt.Sprint(d["response"]), 100), d["done"])
	default:
		what = clip(compact(d), 120)
	}
	src := ""
	if e.Source != "" {
		src = p.paint("2", " ("+string(e.Source)+")")
	}
	fmt.Fprintf(p.w, "  %s %-13s %s%s\n", p.paint("2", fmt.Sprintf("[turn %d]", e.Turn)), p.paint(color, string(e.Type)), what, src)
}

// observation prints an observation's summary line.
func (p *printer) observation(label string, o *harness.Observation) {
	m := o.Metadata
	reward := "null"
	if o.Reward != nil {
		reward = fmt.Sprintf("%g", *o.Reward)
	}
	line := fmt.Sprintf("%s reward=%s done=%v", label, reward, o.Done)
	if m.Response != nil {
		line += fmt.Sprintf(" response=%q", clip(*m.Response, 100))
	}
	if len(m.InjectedTools) > 0 {
		line += " tools=" + strings.Join(m.InjectedTools, ",")
	}
	if m.ErrorType != "" {
		line += p.paint("31", fmt.Sprintf(" error_type=%s error=%q", m.ErrorType, clip(m.Error, 160)))
		if m.Exit != nil {
			line += fmt.Sprintf(" exit=%s", m.Exit)
		}
	}
	fmt.Fprintln(p.w, p.paint("1", line))
	for _, r := range m.RewardDetails {
		score := "—"
		if r.Score != nil {
			score = fmt.Sprintf("%g", *r.Score)
		}
		extra := ""
		if r.Error != "" {
			extra = p.paint("31", " error: "+r.Error)
		}
		fmt.Fprintf(p.w, "    rubric %-12s score=%s weight=%g%s\n", r.Name, score, r.Weight, extra)
	}
	if m.StderrTail != "" {
		fmt.Fprintf(p.w, "    stderr tail: %s\n", clip(m.StderrTail, 300))
	}
}
