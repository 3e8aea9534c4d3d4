package agent

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Directive is one parsed instruction of a user message.
type Directive struct {
	Verb string
	Arg  string // the rest of the line, trimmed
}

// verbs lists every directive; a message with none of them is echoed.
var verbs = map[string]bool{
	"reply": true, "say": true, "tool": true, "tools": true, "sleep": true, "hang": true,
	"crash": true, "exit": true, "stderr": true, "flood": true, "lines": true, "longline": true,
	"garbage": true, "malformed": true, "badevent": true, "ignore-term": true,
	"spawn": true, "escape": true, "orphan": true, "done": true, "history": true,
	"count": true, "env": true, "pwd": true, "write": true, "error": true,
	"closeout": true, "nocomplete": true, "think": true, "rawline": true, "waitfor": true, "waitevent": true, "llm": true, "llmenv": true, "cat": true,
	"attack": true, "remember": true, "recall": true,
}

// Parse splits a message into directives. Directives are separated by
// newlines or ";;". If the first non-empty part does not start with a known
// verb the whole message is a single "echo" directive.
func Parse(msg string) []Directive { return parseWith(msg, nil) }

// parseWith is Parse with extra verbs (a front end's own directives).
func parseWith(msg string, extra map[string]DirectiveFunc) []Directive {
	known := func(v string) bool {
		_, ok := extra[v]
		return verbs[v] || ok
	}
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		for _, p := range strings.Split(line, ";;") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) == 0 {
		return []Directive{{Verb: "echo", Arg: msg}}
	}
	if v, _, _ := strings.Cut(parts[0], " "); !known(v) {
		return []Directive{{Verb: "echo", Arg: msg}}
	}
	out := make([]Directive, 0, len(parts))
	for _, p := range parts {
		v, arg, _ := strings.Cut(p, " ")
		if !known(v) {
			// A line that is not a directive continues the previous reply.
			out = append(out, Directive{Verb: "say", Arg: p})
			continue
		}
		out = append(out, Directive{Verb: v, Arg: strings.TrimSpace(arg)})
	}
	return out
}

// parseDuration accepts Go durations ("1.5s") and bare seconds ("2").
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("missing duration")
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// parseSize accepts byte counts with an optional K or M suffix.
func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
