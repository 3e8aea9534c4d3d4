package streamjson

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/units"
)

// Styles of --mcp-config, and with them the flag dialect of the agent.
const (
	// StyleClaude is Claude Code: {"type":"http","url","headers"} servers,
	// `-p --verbose`, --strict-mcp-config, --permission-mode.
	StyleClaude = "claude"
	// StyleQwen is Qwen Code's compatible mode: {"httpUrl","headers"}
	// servers, no -p (a string --prompt option in Qwen), no --verbose or
	// --strict-mcp-config (Qwen's strict argument parser rejects them),
	// --approval-mode for the permission mode.
	StyleQwen = "qwen"
)

// DefaultInitializeTimeout bounds the wait for the agent's answer to the
// initialize control request before the adapter assumes an agent without
// the control protocol and carries on (see Adapter.Start).
const DefaultInitializeTimeout = 10 * time.Second

// Options are the adapter's harness.options. Unknown keys are an error.
type Options struct {
	// MCPConfigStyle ("mcp_config_style": claude | qwen, default claude)
	// selects the --mcp-config shape and the agent's flag dialect.
	MCPConfigStyle string
	// ProtocolFlags ("protocol_flags", default true) appends the flags the
	// protocol needs: `-p --input-format stream-json --output-format
	// stream-json --verbose` (Qwen style: only the two format flags). Set it
	// false when the command already has them.
	ProtocolFlags bool
	// ExtraArgs ("extra_args") are appended after everything else.
	ExtraArgs []string
	// IncludePartialMessages ("include_partial_messages") adds
	// --include-partial-messages: stream_event lines become llm_chunk events.
	IncludePartialMessages bool
	// PermissionMode ("permission_mode") adds --permission-mode (Qwen
	// style: --approval-mode) with this value.
	PermissionMode string
	// Model ("model") adds --model.
	Model string
	// Initialize ("initialize", default true) sends the initialize control
	// request at start-up and waits for its response as the readiness
	// signal. When false the harness is ready once spawned and still alive
	// after a short settle time.
	Initialize bool
	// InitializeTimeout ("initialize_timeout", default 10s) bounds the wait
	// for the initialize response; without one by then the adapter assumes
	// an agent that does not answer it and, if the process is alive, is ready.
	InitializeTimeout time.Duration
	// MidTurnInput ("mid_turn_input", default false) lets the environment's
	// events deliver text during a turn (harness.Deliverer) as further
	// user lines, each answered by a result line of its own, the turn
	// ending at the last. Off by default: whether a Claude Code version
	// answers each user line so, or folds one written mid-turn into the
	// running turn's single result, is not verified (with the latter the
	// turn would wait for a result that never comes, until turn_timeout).
	MidTurnInput bool
}

// optionKeys lists the accepted keys of harness.options.
var optionKeys = []string{"extra_args", "include_partial_messages", "initialize", "initialize_timeout",
	"mcp_config_style", "mid_turn_input", "model", "permission_mode", "protocol_flags"}

// ParseOptions decodes harness.options strictly: an unknown key or a value
// of the wrong type is an error naming the key.
func ParseOptions(m map[string]any) (Options, error) {
	o := Options{MCPConfigStyle: StyleClaude, ProtocolFlags: true, Initialize: true,
		InitializeTimeout: DefaultInitializeTimeout}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	bad := func(k, want string, v any) {
		errs = append(errs, fmt.Errorf("harness.options.%s: want %s, got %T", k, want, v))
	}
	for _, k := range keys {
		v := m[k]
		switch k {
		case "mcp_config_style":
			s, ok := v.(string)
			switch {
			case !ok:
				bad(k, "a string", v)
			case s != StyleClaude && s != StyleQwen:
				errs = append(errs, fmt.Errorf("harness.options.%s: %q is neither %q nor %q", k, s, StyleClaude, StyleQwen))
			default:
				o.MCPConfigStyle = s
			}
		case "protocol_flags", "include_partial_messages", "initialize", "mid_turn_input":
			b, ok := v.(bool)
			if !ok {
				bad(k, "a boolean", v)
				continue
			}
			switch k {
			case "protocol_flags":
				o.ProtocolFlags = b
			case "include_partial_messages":
				o.IncludePartialMessages = b
			case "mid_turn_input":
				o.MidTurnInput = b
			default:
				o.Initialize = b
			}
		case "permission_mode", "model":
			s, ok := v.(string)
			if !ok {
				bad(k, "a string", v)
				continue
			}
			if k == "model" {
				o.Model = s
			} else {
				o.PermissionMode = s
			}
		case "extra_args":
			args, ok := stringList(v)
			if !ok {
				bad(k, "a list of strings", v)
				continue
			}
			o.ExtraArgs = args
		case "initialize_timeout":
			d, err := duration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("harness.options.%s: %w", k, err))
				continue
			}
			if d <= 0 {
				errs = append(errs, fmt.Errorf("harness.options.%s: must be positive", k))
				continue
			}
			o.InitializeTimeout = d
		default:
			errs = append(errs, kit.UnknownOption(k, optionKeys))
		}
	}
	return o, errors.Join(errs...)
}

// stringList accepts []string or a YAML/JSON list of strings.
func stringList(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return append([]string(nil), l...), true
	case []any:
		out := make([]string, len(l))
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// duration accepts "1.5s"-style strings, bare seconds, and time.Duration.
func duration(v any) (time.Duration, error) {
	switch d := v.(type) {
	case time.Duration:
		return d, nil
	case units.Duration:
		return d.D(), nil
	case string:
		u, err := units.ParseDuration(d)
		return u.D(), err
	case int:
		return time.Duration(d) * time.Second, nil
	case int64:
		return time.Duration(d) * time.Second, nil
	case float64:
		return time.Duration(d * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("want a duration such as \"10s\", got %T", v)
}
