package bridge

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrReservedName: a tool is named like an orchestration control
	// (reset, step, state, close).
	ErrReservedName = errors.New("reserved tool name")
	// ErrDuplicateTool: two tools (of one or two sources) have the same name.
	ErrDuplicateTool = errors.New("duplicate tool name")
	// ErrNameConflict: renaming a tool that shadows a harness built-in would
	// collide with another name, or names still clash after renaming.
	ErrNameConflict = errors.New("tool name conflict")
	// ErrUnknownTool: no tool of the catalog answers to the name.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrInvalidTool: an upstream described a tool the bridge cannot serve
	// (no name, malformed JSON).
	ErrInvalidTool = errors.New("invalid tool definition")
	// ErrNotRunning: the tool server is not started, has exited or was closed.
	ErrNotRunning = errors.New("tool server is not running")
	// ErrTimeout: a tool call exceeded its per-call timeout.
	ErrTimeout = errors.New("tool call timed out")
	// ErrUpstream: the upstream answered a call with a protocol error.
	ErrUpstream = errors.New("tool server error")
	// ErrBadArguments: call arguments are not a JSON object.
	ErrBadArguments = errors.New("tool arguments must be a JSON object")
)

// opError is a failure of a source or call. Its message is written for the
// model as much as for logs (it becomes the text of an error result);
// errors.Is sees both its kind (a sentinel above) and its cause.
type opError struct {
	kind, cause error
	msg         string
}

// Error returns the message.
func (e *opError) Error() string { return e.msg }

// Unwrap returns the kind and, if any, the cause.
func (e *opError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// opErr builds an opError; format applies to the message only.
func opErr(kind, cause error, format string, args ...any) error {
	return &opError{kind: kind, cause: cause, msg: fmt.Sprintf(format, args...)}
}

// ReservedNames are the orchestration controls no environment tool may use.
var ReservedNames = []string{"close", "reset", "state", "step"}

// NameError is a catalog configuration error. Its message follows OpenEnv's
// resolve_tool_conflicts wording, extended with the sources involved; Unwrap
// gives one of ErrReservedName, ErrDuplicateTool or ErrNameConflict.
type NameError struct {
	// Kind is the sentinel this error wraps.
	Kind error
	// Names are the offending tool names (sorted for reserved names).
	Names []string
	// Sources are the sources involved, in catalog order.
	Sources []string
	msg     string
}

// Error returns the message, in OpenEnv's wording.
func (e *NameError) Error() string { return e.msg }

// Unwrap returns Kind.
func (e *NameError) Unwrap() error { return e.Kind }

func reservedError(names []string, sources []string) *NameError {
	names = append([]string(nil), names...)
	sort.Strings(names)
	return &NameError{Kind: ErrReservedName, Names: names, Sources: sources,
		msg: fmt.Sprintf("Tool names are reserved for orchestration controls: %s (from %s)",
			strings.Join(names, ", "), quoteSources(sources))}
}

func duplicateError(name, first, second string) *NameError {
	where := fmt.Sprintf("sources %q and %q", first, second)
	if first == second {
		where = fmt.Sprintf("twice in source %q", first)
	}
	return &NameError{Kind: ErrDuplicateTool, Names: []string{name}, Sources: []string{first, second},
		msg: fmt.Sprintf("Duplicate environment tool name: %s (%s)", name, where)}
}

// alsoTakenError: name of source collides with a built-in and renamed is
// taken by takenBy ("" for a harness built-in).
func alsoTakenError(name, renamed, source, takenBy string) *NameError {
	by := "a harness built-in tool"
	srcs := []string{source}
	if takenBy != "" {
		by = fmt.Sprintf("a tool of source %q", takenBy)
		srcs = append(srcs, takenBy)
	}
	return &NameError{Kind: ErrNameConflict, Names: []string{name, renamed}, Sources: srcs,
		msg: fmt.Sprintf("Cannot resolve tool name conflict: '%s' collides with a harness built-in tool and '%s' is also taken (by %s; tool of source %q)",
			name, renamed, by, source)}
}

func afterPrefixError(name, first, second string) *NameError {
	return &NameError{Kind: ErrNameConflict, Names: []string{name}, Sources: []string{first, second},
		msg: fmt.Sprintf("Tool name conflict after prefixing: %s (sources %q and %q)", name, first, second)}
}

func quoteSources(s []string) string {
	q := make([]string, len(s))
	for i, n := range s {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return "source " + q[0]
	}
	return "sources " + strings.Join(q, ", ")
}
