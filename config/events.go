package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/harnessd/harnessd/internal/units"
)

// EventConfig is one event of the environment's event queue (events:): a
// trigger and an effect. Exactly one trigger and exactly one effect are
// set. docs/configuration.md ("Events") describes them; package session
// runs the queue.
type EventConfig struct {
	// Name labels the event in the record (optional).
	Name string `yaml:"name" json:"name,omitempty"`

	// BeforeTurn fires the event as turn N begins (N >= 1).
	BeforeTurn int `yaml:"before_turn" json:"before_turn,omitempty"`
	// AfterTool fires the event once a call to one of the environment's
	// tools on the bridge, matching the pattern, has returned.
	AfterTool *ToolPattern `yaml:"after_tool" json:"after_tool,omitempty"`
	// After fires the event this long into a turn (wall clock), if the
	// turn is still running then.
	After units.Duration `yaml:"after" json:"after,omitempty"`
	// ResponseMatches fires the event when a turn's response (the
	// harness's final text) matches this regular expression (RE2).
	ResponseMatches string `yaml:"response_matches" json:"response_matches,omitempty"`

	// Message is text appended to the next turn's message.
	Message string `yaml:"message" json:"message,omitempty"`
	// File is placed in the workspace.
	File *FileEffect `yaml:"file" json:"file,omitempty"`
	// Tool is a call the environment makes to one of its own tool servers
	// (to change its state: a new email, a failing CI run).
	Tool *ToolEffect `yaml:"tool" json:"tool,omitempty"`
	// Deliver is text handed to the harness during the running turn where
	// its protocol allows, else appended to the next turn's message.
	Deliver string `yaml:"deliver" json:"deliver,omitempty"`

	// Once fires the event at most once per episode (default true); false
	// fires it every time its trigger holds (after: once per turn).
	Once *bool `yaml:"once" json:"once,omitempty"`

	response *regexp.Regexp
}

// ToolPattern matches a tool call on the bridge: its served name against
// Name (a path.Match glob: "run_*"), and, when set, its arguments (compact
// JSON) against the regular expression Arguments. In YAML it is a mapping
// {name, arguments} or just the name.
type ToolPattern struct {
	Name      string `yaml:"name" json:"name"`
	Arguments string `yaml:"arguments" json:"arguments,omitempty"`

	args *regexp.Regexp
}

// UnmarshalYAML takes a bare name as {name: NAME}.
func (p *ToolPattern) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		p.Name = n.Value
		return nil
	}
	type plain ToolPattern
	return n.Decode((*plain)(p))
}

// Matches reports whether a call of tool name with arguments args (a JSON
// object) matches the pattern. Call it on a normalized configuration.
func (p *ToolPattern) Matches(name string, args json.RawMessage) bool {
	if ok, _ := path.Match(p.Name, name); !ok {
		return false
	}
	if p.args == nil {
		return true
	}
	return p.args.Match(compactJSON(args))
}

// compactJSON is args without insignificant spaces ({} when empty).
func compactJSON(args json.RawMessage) []byte {
	if len(args) == 0 {
		return []byte("{}")
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return args
	}
	return b.Bytes()
}

// FileEffect is a file placed in the workspace: Path relative to it (no
// .., no absolute path; links are never followed), Content its text.
type FileEffect struct {
	Path    string `yaml:"path" json:"path"`
	Content string `yaml:"content" json:"content"`
}

// ToolEffect is a call to the tool Name of the configured tool server
// Server (tools[].name), with Arguments (a mapping). With Result set the
// tool server is the event's author: its result text, unless empty, is
// then the event's text, appended to the next message (ResultMessage) or
// delivered mid-turn (ResultDeliver).
type ToolEffect struct {
	Server    string         `yaml:"server" json:"server"`
	Name      string         `yaml:"name" json:"name"`
	Arguments map[string]any `yaml:"arguments" json:"arguments,omitempty"`
	Result    string         `yaml:"result" json:"result,omitempty"`
}

// What becomes of a tool effect's result text (ToolEffect.Result).
const (
	ResultMessage = "message"
	ResultDeliver = "deliver"
)

// ArgumentsJSON returns the call's arguments as a JSON object.
func (t *ToolEffect) ArgumentsJSON() (json.RawMessage, error) {
	if len(t.Arguments) == 0 {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(t.Arguments)
	if err != nil {
		return nil, fmt.Errorf("encode the arguments of tool %s/%s: %w", t.Server, t.Name, err)
	}
	return b, nil
}

// IsOnce reports the effective Once (default true).
func (e *EventConfig) IsOnce() bool { return e.Once == nil || *e.Once }

// ResponseRegexp returns the compiled ResponseMatches (nil without one).
// Call it on a normalized configuration.
func (e *EventConfig) ResponseRegexp() *regexp.Regexp { return e.response }

// Triggers returns the trigger keys that are set, in documentation order.
func (e *EventConfig) Triggers() []string {
	var out []string
	if e.BeforeTurn != 0 {
		out = append(out, "before_turn")
	}
	if e.AfterTool != nil {
		out = append(out, "after_tool")
	}
	if e.After != 0 {
		out = append(out, "after")
	}
	if e.ResponseMatches != "" {
		out = append(out, "response_matches")
	}
	return out
}

// Effects returns the effect keys that are set, in documentation order.
func (e *EventConfig) Effects() []string {
	var out []string
	if e.Message != "" {
		out = append(out, "message")
	}
	if e.File != nil {
		out = append(out, "file")
	}
	if e.Tool != nil {
		out = append(out, "tool")
	}
	if e.Deliver != "" {
		out = append(out, "deliver")
	}
	return out
}

// Describe is a one-line account of the event for validate: its trigger
// and effect.
func (e *EventConfig) Describe() string {
	var trig, eff string
	switch {
	case e.BeforeTurn != 0:
		trig = fmt.Sprintf("before turn %d", e.BeforeTurn)
	case e.AfterTool != nil:
		trig = "after a tool call matching " + e.AfterTool.Name
		if e.AfterTool.Arguments != "" {
			trig += fmt.Sprintf(" with arguments matching %q", e.AfterTool.Arguments)
		}
	case e.After != 0:
		trig = fmt.Sprintf("%s into a turn", e.After)
	case e.ResponseMatches != "":
		trig = fmt.Sprintf("when a response matches %q", e.ResponseMatches)
	}
	switch {
	case e.Message != "":
		eff = "append a message to the next turn"
	case e.File != nil:
		eff = "place workspace file " + e.File.Path
	case e.Tool != nil:
		eff = fmt.Sprintf("call tool %s/%s", e.Tool.Server, e.Tool.Name)
		switch e.Tool.Result {
		case ResultMessage:
			eff += ", its result appended to the next turn"
		case ResultDeliver:
			eff += ", its result delivered mid-turn (else with the next turn)"
		}
	case e.Deliver != "":
		eff = "deliver a message mid-turn (else with the next turn)"
	}
	s := trig + ": " + eff
	if e.Name != "" {
		s = e.Name + ": " + s
	}
	if !e.IsOnce() {
		s += " (every time)"
	}
	return s
}

// validateEvents checks events: and compiles their patterns.
func (c *Config) validateEvents() []error {
	var errs []error
	servers := map[string]bool{}
	for _, t := range c.Tools {
		servers[t.Name] = true
	}
	for i := range c.Events {
		e := &c.Events[i]
		at := fmt.Sprintf("events[%d]", i)
		if e.Name != "" {
			at += fmt.Sprintf(" %q", e.Name)
		}
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", at, fmt.Sprintf(format, a...)))
		}
		switch tr := e.Triggers(); len(tr) {
		case 0:
			bad("a trigger is required: one of before_turn, after_tool, after, response_matches")
		case 1:
		default:
			bad("exactly one trigger is allowed, not %s", strings.Join(tr, " and "))
		}
		switch ef := e.Effects(); len(ef) {
		case 0:
			bad("an effect is required: one of message, file, tool, deliver")
		case 1:
		default:
			bad("exactly one effect is allowed, not %s", strings.Join(ef, " and "))
		}
		if e.BeforeTurn < 0 {
			bad("before_turn must be a turn number from 1, not %d", e.BeforeTurn)
		}
		if e.After < 0 {
			bad("after must be a positive duration, not %s", e.After)
		}
		if p := e.AfterTool; p != nil {
			if p.Name == "" {
				bad("after_tool.name is required (a tool name or a glob such as run_*)")
			} else if _, err := path.Match(p.Name, ""); err != nil {
				bad("after_tool.name %q is not a valid pattern: %v", p.Name, err)
			}
			p.args = nil
			if p.Arguments != "" {
				re, err := regexp.Compile(p.Arguments)
				if err != nil {
					bad("after_tool.arguments is not a valid regular expression: %v", err)
				}
				p.args = re
			}
		}
		e.response = nil
		if e.ResponseMatches != "" {
			re, err := regexp.Compile(e.ResponseMatches)
			if err != nil {
				bad("response_matches is not a valid regular expression: %v", err)
			}
			e.response = re
		}
		if f := e.File; f != nil {
			if err := checkEventPath(f.Path); err != nil {
				bad("file.path %v", err)
			}
		}
		if t := e.Tool; t != nil {
			switch {
			case t.Server == "":
				bad("tool.server is required (the name of one of tools:)")
			case !servers[t.Server]:
				bad("tool.server %q is not one of the configured tools: servers", t.Server)
			}
			if t.Name == "" {
				bad("tool.name is required")
			}
			if t.Result != "" && t.Result != ResultMessage && t.Result != ResultDeliver {
				bad("tool.result must be %s or %s, not %q", ResultMessage, ResultDeliver, t.Result)
			}
			if _, err := t.ArgumentsJSON(); err != nil {
				bad("tool.arguments: %v", err)
			}
		}
	}
	return errs
}

// checkEventPath accepts a relative path that stays beneath the workspace.
func checkEventPath(p string) error {
	switch {
	case p == "":
		return errors.New("is required")
	case filepath.IsAbs(p):
		return fmt.Errorf("%q must be relative to the workspace", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q contains a NUL byte", p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return fmt.Errorf("%q must not contain .. (it must stay in the workspace)", p)
		}
	}
	if c := filepath.Clean(p); c == "." {
		return fmt.Errorf("%q names the workspace itself, not a file", p)
	}
	return nil
}
