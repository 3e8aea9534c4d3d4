package rubric

import (
	"errors"
	"fmt"
	"math"
	"regexp"

	"github.com/harnessd/harnessd/internal/units"
)

// When says at which point a rubric scores.
type When string

// Scoring points.
const (
	OnTurn When = "turn" // after every completed turn (the default)
	OnDone When = "done" // only when the episode ends
)

// Kinds of rubric.
const (
	KindCommand = "command"
	KindMatch   = "match"
	KindTool    = "tool"
)

// DefaultCommandTimeout bounds a command scorer.
const DefaultCommandTimeout = 60 * units.Duration(1e9)

// Spec configures one rubric. Exactly the fields of its Type apply.
type Spec struct {
	Name   string   `yaml:"name" json:"name"`
	Type   string   `yaml:"type" json:"type"`
	On     When     `yaml:"on" json:"on,omitempty"`
	Weight *float64 `yaml:"weight" json:"weight,omitempty"`

	// command: argv run in the workspace; the observation JSON arrives on
	// stdin; the reward is the last number printed on stdout, or 1 for exit
	// code 0 and 0 otherwise when nothing numeric is printed.
	Command []string       `yaml:"command" json:"command,omitempty"`
	Timeout units.Duration `yaml:"timeout" json:"timeout,omitempty"`

	// match: 1 when the response matches Pattern (a regular expression) or
	// contains Contains, else 0.
	Pattern  string `yaml:"pattern" json:"pattern,omitempty"`
	Contains string `yaml:"contains" json:"contains,omitempty"`

	// tool: call Tool (typically hidden from the harness) with Arguments;
	// string values may use {{response}}, {{message}}, {{workspace}},
	// {{episode_id}} and {{turn}}. The result must be a number, or JSON with
	// a numeric "score" or "reward" field.
	Tool      string         `yaml:"tool" json:"tool,omitempty"`
	Arguments map[string]any `yaml:"arguments" json:"arguments,omitempty"`
}

func (s *Spec) weight() float64 {
	if s.Weight == nil {
		return 1
	}
	return *s.Weight
}

// validate checks a spec and fills defaults; the error joins every
// problem of the spec.
func (s *Spec) validate(i int) error {
	if s.Name == "" {
		s.Name = fmt.Sprintf("%s-%d", s.Type, i+1)
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("rubric %q: %s", s.Name, fmt.Sprintf(format, a...)))
	}
	switch s.On {
	case "":
		s.On = OnTurn
	case OnTurn, OnDone:
	default:
		bad("on must be %q or %q, not %q", OnTurn, OnDone, s.On)
	}
	switch s.Type {
	case KindCommand:
		if len(s.Command) == 0 {
			bad("command rubric needs a command")
		}
	case KindMatch:
		if (s.Pattern == "") == (s.Contains == "") {
			bad("match rubric needs exactly one of pattern or contains")
		}
		if s.Pattern != "" {
			if _, err := regexp.Compile(s.Pattern); err != nil {
				bad("pattern: %v", err)
			}
		}
	case KindTool:
		if s.Tool == "" {
			bad("tool rubric needs a tool name")
		}
	case "":
		bad("type is required (command, match or tool)")
	default:
		bad("unknown type %q (want command, match or tool)", s.Type)
	}
	if w := s.weight(); math.IsNaN(w) || math.IsInf(w, 0) {
		bad("weight must be a finite number, not %v", w)
	}
	if (s.Type == KindCommand || s.Type == KindTool) && s.Timeout == 0 {
		s.Timeout = DefaultCommandTimeout
	}
	return errors.Join(errs...)
}

// ErrNoToolCaller is returned by New for a tool rubric without a ToolFunc.
var ErrNoToolCaller = errors.New("tool rubric configured but no tool caller available")
