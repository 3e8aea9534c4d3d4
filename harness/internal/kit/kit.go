// Package kit holds small helpers shared by harness adapters: strict
// decoding of an adapter's options, the harnessd variables every harness
// gets, the mapping of process start errors onto failures, and telling an
// exit before a turn's message was taken from a crash mid-turn (exit.go). It
// owns no state and starts nothing.
package kit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// DecodeOptions decodes an adapter's options (harness.options, as YAML gave
// them) into dst, a pointer to a struct with json tags. Unknown keys and
// values of the wrong type are errors naming the key.
func DecodeOptions(opts map[string]any, dst any) error {
	if len(opts) == 0 {
		opts = map[string]any{}
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("harness.options: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("harness.options.%s: a %s cannot be a %s", te.Field, te.Value, goTypeName(te.Type.String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("harness.options: unknown key %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return fmt.Errorf("harness.options%s: %w", culprit(opts, dst), err)
		}
	}
	return nil
}

// culprit names the option whose value dst's decoder rejects (".key"), or
// returns "" if no single key does.
func culprit(opts map[string]any, dst any) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	typ := reflect.TypeOf(dst).Elem()
	for _, k := range keys {
		b, err := json.Marshal(map[string]any{k: opts[k]})
		if err != nil {
			return "." + k
		}
		if json.Unmarshal(b, reflect.New(typ).Interface()) != nil {
			return "." + k
		}
	}
	return ""
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "whole number"
	case t == "string":
		return "string"
	case t == "bool":
		return "boolean"
	case strings.HasPrefix(t, "[]"):
		return "list"
	case strings.HasPrefix(t, "map["):
		return "mapping"
	}
	return t
}

// Env returns the launch's environment with the harnessd variables every
// adapter gives its harness (episode, workspace, MCP bridge), with set
// applied on top: a "NAME=value" entry of set replaces any earlier NAME.
func Env(l *harness.Launch, set ...string) []string {
	add := []string{
		"HARNESSD_EPISODE_ID=" + l.EpisodeID,
		"HARNESSD_WORKSPACE=" + l.Workspace,
	}
	if l.MCP != nil {
		add = append(add,
			"HARNESSD_MCP_URL="+l.MCP.URL,
			"HARNESSD_MCP_TOKEN="+l.MCP.Token,
			"HARNESSD_MCP_CONFIG="+l.MCP.ConfigPath,
		)
	}
	add = append(add, set...)
	override := map[string]bool{}
	for _, kv := range add {
		name, _, _ := strings.Cut(kv, "=")
		override[name] = true
	}
	env := make([]string, 0, len(l.Env)+len(add))
	for _, kv := range l.Env {
		if name, _, _ := strings.Cut(kv, "="); !override[name] {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}

// StartFailure turns an error from starting or readying a process into a
// startup_failed Failure carrying the exit status and output tail.
func StartFailure(err error) *harness.Failure {
	f := harness.Wrap(wire.FailureStartupFailed, err, "harness did not start")
	var se *process.StartError
	if errors.As(err, &se) {
		f.Message = se.Error()
		f.Exit, f.StderrTail = se.Exit, se.StderrTail
	}
	return f
}

// Diagnostics reports p's exit status (nil while it runs), its stderr tail
// and its pid, as harness.Adapter.Diagnostics does; a nil p gives zero values.
func Diagnostics(p *process.Process) (*process.ExitStatus, string, int) {
	if p == nil {
		return nil, "", 0
	}
	var exit *process.ExitStatus
	if st, ok := p.ExitStatus(); ok {
		exit = &st
	}
	return exit, p.StderrTail(), p.Pid()
}

// TOMLString quotes s as a TOML basic string (for agents' config.toml).
func TOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
