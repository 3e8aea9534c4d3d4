package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// answer is the decided response to one generation request.
type answer struct {
	rule  string // which rule answered, for the log
	note  string // anything worth knowing (e.g. an unresolved tool)
	delay time.Duration
	err   *HTTPError
	text  string
	calls []toolCall
}

// toolCall is a resolved tool call to emit.
type toolCall struct {
	name      string
	namespace string
	custom    bool
	args      json.RawMessage // compact JSON object
}

// decide picks the answer for request number n (see Script for the
// default behaviour).
func (s *Script) decide(c *conversation, n int) answer {
	if s != nil {
		for i, r := range s.Rules {
			if r.When.matches(c, n) {
				return r.Reply.answer(c, n, r.label(i))
			}
		}
	}
	return defaultAnswer(c, n)
}

func (rep Reply) answer(c *conversation, n int, label string) answer {
	if rep.Error != nil {
		e := *rep.Error
		e.Message = expand(e.Message, vars(c, n))
		return answer{rule: label, delay: time.Duration(rep.Delay), err: &e}
	}
	if rep.answersDefault() {
		a := defaultAnswer(c, n)
		a.rule = label + " -> " + a.rule
		a.delay = time.Duration(rep.Delay)
		return a
	}
	v := vars(c, n)
	a := answer{rule: label, delay: time.Duration(rep.Delay), text: expand(rep.Text, v)}
	for _, call := range rep.calls() {
		t, ok := resolveTool(call.Tool, c.tools)
		if !ok {
			return noTool(label, call.Tool, c)
		}
		args, err := expandArgs(call.Arguments, v)
		if err != nil { // validated at parse time; only reachable for hand-built scripts
			return answer{rule: label, err: &HTTPError{Status: 500, Message: "fakellm: " + err.Error()}}
		}
		a.calls = append(a.calls, toolCall{name: t.name, namespace: t.namespace, custom: t.custom, args: args})
	}
	return a
}

// noTool is the answer when a script asks for a tool the request does not
// offer: a loud text (not an HTTP error, which agents would retry).
func noTool(label, spec string, c *conversation) answer {
	msg := fmt.Sprintf("MOCK-NO-TOOL: no offered tool matches %q (offered: %s)", spec, strings.Join(c.toolNames(), ", "))
	return answer{rule: label, note: msg, text: msg}
}

// callDirective finds "call NAME" in a user message.
var callDirective = regexp.MustCompile(`\bcall\s+([A-Za-z0-9_.:/-]+)`)

func defaultAnswer(c *conversation, n int) answer {
	switch {
	case c.lastIsToolResult():
		return answer{rule: "default:tool-result", text: "MOCK-DONE: " + c.lastToolResults()}
	case len(c.tools) == 0:
		return answer{rule: "default:no-tools", text: "MOCK-AUX"}
	}
	user := c.lastUserText()
	for _, m := range callDirective.FindAllStringSubmatchIndex(user, -1) {
		name := strings.TrimRight(user[m[2]:m[3]], ".:/-")
		t, ok := resolveTool(name, c.tools)
		if !ok {
			continue
		}
		args, note := trailingObject(user[m[3]:])
		return answer{rule: "default:call", note: note,
			calls: []toolCall{{name: t.name, namespace: t.namespace, custom: t.custom, args: args}}}
	}
	return answer{rule: "default:reply", text: "MOCK-REPLY: " + user}
}

// trailingObject decodes the JSON object that starts s (after spaces), or
// returns {} with a note saying why not.
func trailingObject(s string) (json.RawMessage, string) {
	s = strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(s, "{") {
		return json.RawMessage(`{}`), ""
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&obj); err != nil {
		return json.RawMessage(`{}`), "call arguments are not a JSON object: " + err.Error()
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s[:dec.InputOffset()])); err != nil {
		return json.RawMessage(`{}`), "call arguments: " + err.Error()
	}
	return buf.Bytes(), ""
}

// resolveTool finds the offered tool a script's tool spec means. Agents
// rename MCP tools (mcp__S__T, mcp_S_T, S_T, S-T, namespace mcp__S + T), so
// the spec may be the exact name or any part of it. Preference: an exact
// match of the full or bare name; then full names ending with the spec;
// then full names containing it; then a case-insensitive containment. Ties
// go to the shortest name, then to the first offered.
func resolveTool(spec string, tools []tool) (tool, bool) {
	if spec == "" {
		return tool{}, false
	}
	for _, t := range tools {
		if t.fullName() == spec || t.name == spec {
			return t, true
		}
	}
	tiers := []func(string) bool{
		func(n string) bool { return strings.HasSuffix(n, spec) },
		func(n string) bool { return strings.Contains(n, spec) },
		func(n string) bool { return strings.Contains(strings.ToLower(n), strings.ToLower(spec)) },
	}
	for _, ok := range tiers {
		var cands []tool
		for _, t := range tools {
			if ok(t.fullName()) {
				cands = append(cands, t)
			}
		}
		if len(cands) > 0 {
			sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].fullName()) < len(cands[j].fullName()) })
			return cands[0], true
		}
	}
	return tool{}, false
}

// placeholder matches {{name}} in templates.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z_]+)\s*\}\}`)

// Placeholders lists the names a reply's text, error message and argument
// strings may use as {{name}}, with what each expands to.
var Placeholders = map[string]string{
	"user":          "the last user text message",
	"user_messages": "every user text message, joined by \" | \"",
	"tool_result":   "the tool result(s) carried by the last message, joined by newlines",
	"tool_results":  "every tool result in the conversation, joined by \" | \"",
	"tools":         "the offered tool names, joined by \", \"",
	"model":         "the requested model",
	"dialect":       "the request's dialect",
	"n":             "the request number (as matched by nth)",
}

func vars(c *conversation, n int) map[string]string {
	return map[string]string{
		"user":          c.lastUserText(),
		"user_messages": strings.Join(c.userTexts(), " | "),
		"tool_result":   c.lastToolResults(),
		"tool_results":  strings.Join(c.allToolResults(), " | "),
		"tools":         strings.Join(c.toolNames(), ", "),
		"model":         c.model,
		"dialect":       string(c.dialect),
		"n":             strconv.Itoa(n),
	}
}

func checkTemplate(s string) error {
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		if _, ok := Placeholders[m[1]]; !ok {
			return fmt.Errorf("unknown placeholder {{%s}}", m[1])
		}
	}
	return nil
}

func expand(s string, v map[string]string) string {
	if v == nil {
		return s
	}
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		return v[placeholder.FindStringSubmatch(m)[1]]
	})
}

// expandArgs checks that raw is a JSON object (empty means {}) and expands
// placeholders in its string values; v == nil only validates.
func expandArgs(raw json.RawMessage, v map[string]string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if _, ok := obj.(map[string]any); !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	var walkErr error
	var walk func(x any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case string:
			if err := checkTemplate(t); err != nil && walkErr == nil {
				walkErr = err
			}
			return expand(t, v)
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return x
	}
	obj = walk(obj)
	if walkErr != nil {
		return nil, fmt.Errorf("arguments: %w", walkErr)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return b, nil
}
