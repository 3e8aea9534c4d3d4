package oneshot

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/units"
)

// DefaultInterruptGrace is how long Interrupt waits after SIGINT before it
// kills the turn's process.
const DefaultInterruptGrace = 3 * time.Second

// Output formats.
const (
	FormatText     = "text"
	FormatJSONL    = "jsonl"
	FormatCodex    = "codex"
	FormatGemini   = "gemini"
	FormatOpenCode = "opencode"
)

// MCP config shapes.
const (
	MCPNone     = "none"
	MCPGemini   = "gemini"
	MCPOpenCode = "opencode"
	MCPCodex    = "codex"
)

// defaultSessionField is the JSON field holding the session id in each format.
var defaultSessionField = map[string]string{
	FormatJSONL:    "session_id",
	FormatCodex:    "thread_id",
	FormatGemini:   "session_id",
	FormatOpenCode: "sessionID",
}

// Options are the exec adapter's harness.options.
type Options struct {
	// Command is the argv template of every turn (of turns after the first
	// when FirstCommand is set). Empty: Launch.Command, with "{message}"
	// appended unless it has the placeholder.
	Command []string
	// FirstCommand is the argv template of the first turn, when starting a
	// session differs from resuming one.
	FirstCommand []string
	// SessionRegex captures the session id from stdout or stderr lines: the
	// group named session_id, else group 1, else the whole match.
	SessionRegex *regexp.Regexp
	// SessionField captures the session id from a JSON stdout line: a
	// dotted path such as "thread_id" or "part.sessionID". It defaults to
	// the format's field; "" turns it off.
	SessionField string
	// Format is how stdout is read: text, jsonl, codex, gemini or opencode.
	Format string
	// MCPConfig is the config file written into HOME for the bridge: none,
	// gemini, opencode or codex.
	MCPConfig string
	// Env is added to the environment of every turn's process.
	Env map[string]string
	// NonzeroOK makes a non-zero exit an ordinary end of turn (its status
	// in Extra["exit"]) instead of a harness_crashed failure.
	NonzeroOK bool
	// InterruptGrace is how long an interrupted turn's process has between
	// SIGINT and being killed.
	InterruptGrace time.Duration
}

type wireOptions struct {
	Command        []string          `json:"command"`
	FirstCommand   []string          `json:"first_command"`
	SessionRegex   string            `json:"session_regex"`
	SessionField   *string           `json:"session_field"`
	Format         string            `json:"format"`
	MCPConfig      string            `json:"mcp_config"`
	Env            map[string]string `json:"env"`
	NonzeroOK      bool              `json:"nonzero_ok"`
	InterruptGrace units.Duration    `json:"interrupt_grace"`
}

// ParseOptions decodes and validates harness.options strictly (unknown keys
// are errors) and applies defaults.
func ParseOptions(m map[string]any) (*Options, error) {
	var w wireOptions
	if err := kit.DecodeOptions(m, &w); err != nil {
		return nil, err
	}
	o := &Options{
		Command: w.Command, FirstCommand: w.FirstCommand, Format: w.Format, MCPConfig: w.MCPConfig,
		Env: w.Env, NonzeroOK: w.NonzeroOK, InterruptGrace: w.InterruptGrace.D(),
	}
	var errs []error
	if o.Format == "" {
		o.Format = FormatText
	}
	if _, ok := parsers[o.Format]; !ok {
		errs = append(errs, fmt.Errorf("harness.options.format: unknown format %q (have %v)", o.Format, formatNames()))
	}
	switch o.MCPConfig {
	case "":
		o.MCPConfig = MCPNone
	case MCPNone, MCPGemini, MCPOpenCode, MCPCodex:
	default:
		errs = append(errs, fmt.Errorf("harness.options.mcp_config: unknown shape %q (none, gemini, opencode, codex)", o.MCPConfig))
	}
	if w.SessionRegex != "" {
		re, err := regexp.Compile(w.SessionRegex)
		if err != nil {
			errs = append(errs, fmt.Errorf("harness.options.session_regex: %w", err))
		}
		o.SessionRegex = re
	}
	if w.SessionField != nil {
		o.SessionField = *w.SessionField
	} else {
		o.SessionField = defaultSessionField[o.Format]
	}
	if w.Command != nil && len(w.Command) == 0 {
		errs = append(errs, errors.New("harness.options.command must not be empty"))
	}
	if w.FirstCommand != nil && len(w.FirstCommand) == 0 {
		errs = append(errs, errors.New("harness.options.first_command must not be empty"))
	}
	for _, t := range [][]string{o.Command, o.FirstCommand} {
		if err := checkTemplate(t); err != nil {
			errs = append(errs, err)
		}
	}
	if o.InterruptGrace < 0 {
		errs = append(errs, errors.New("harness.options.interrupt_grace must not be negative"))
	}
	if o.InterruptGrace == 0 {
		o.InterruptGrace = DefaultInterruptGrace
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return o, nil
}

func formatNames() []string {
	names := make([]string, 0, len(parsers))
	for n := range parsers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
