package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/units"
)

// Permission policies.
const (
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
)

// Options are the acp adapter's harness.options. See the package
// documentation for their meaning.
type Options struct {
	// Mode is set with session/set_mode after session/new, if not empty.
	Mode string `json:"mode"`
	// Permission is the answer to permission requests: allow or deny.
	Permission string `json:"permission"`
	// DenyPatterns are RE2 expressions; a permission request whose tool
	// title or name matches one is rejected.
	DenyPatterns []string `json:"deny_patterns"`
	// InitializeTimeout bounds the initialize request (0: only the
	// start-up timeout).
	InitializeTimeout units.Duration `json:"initialize_timeout"`
	// AuthMethod is used with authenticate when session/new requires it.
	AuthMethod string `json:"auth_method"`
	// MCPStdioCommand is a stdio MCP proxy to the bridge, for agents
	// without http MCP support.
	MCPStdioCommand []string `json:"mcp_stdio_command"`

	deny []*regexp.Regexp
}

// ParseOptions decodes harness.options strictly: an unknown key, a value of
// the wrong type, an unknown permission policy or a bad pattern is an error.
func ParseOptions(m map[string]any) (Options, error) {
	var o Options
	if len(m) > 0 {
		b, err := json.Marshal(m)
		if err != nil {
			return o, fmt.Errorf("harness.options: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return o, optionError(err)
		}
	}
	switch o.Permission {
	case "":
		o.Permission = PermissionAllow
	case PermissionAllow, PermissionDeny:
	default:
		return o, fmt.Errorf("harness.options.permission: %q is neither %q nor %q", o.Permission, PermissionAllow, PermissionDeny)
	}
	for _, p := range o.DenyPatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return o, fmt.Errorf("harness.options.deny_patterns: %w", err)
		}
		o.deny = append(o.deny, re)
	}
	if o.MCPStdioCommand != nil && len(o.MCPStdioCommand) == 0 {
		return o, errors.New("harness.options.mcp_stdio_command: empty command")
	}
	return o, nil
}

// optionError rewrites a JSON decoding error in the terms of the options.
func optionError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("harness.options.%s: got a %s, want %s", te.Field, te.Value, typeName(te.Type.String()))
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		key, _ := strconv.Unquote(msg)
		return kit.UnknownOption(key, kit.JSONKeys(&Options{}))
	}
	return fmt.Errorf("harness.options: %w", err)
}

func typeName(t string) string {
	switch t {
	case "string":
		return "a string"
	case "[]string":
		return "a list of strings"
	case "units.Duration":
		return "a duration"
	}
	return t
}

// denied reports whether the policy rejects a tool call with this title and
// name.
func (o *Options) denied(title, name string) bool {
	if o.Permission == PermissionDeny {
		return true
	}
	for _, re := range o.deny {
		if (title != "" && re.MatchString(title)) || (name != "" && re.MatchString(name)) {
			return true
		}
	}
	return false
}
