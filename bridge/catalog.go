package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
)

// DefaultPrefix is prepended to a tool whose name is a harness built-in.
const DefaultPrefix = "env_"

// CatalogOptions configure conflict resolution and visibility. Patterns in
// Expose and Hide (path.Match syntax) match a tool's upstream name, its
// served name, or "source/upstream" ("grader/*" matches every tool of
// source grader).
type CatalogOptions struct {
	// Builtins are the harness's own tool names. An environment tool with one
	// of these names is served as Prefix+name.
	Builtins []string
	// Prefix is prepended to tools shadowing built-ins; empty means
	// DefaultPrefix.
	Prefix string
	// Expose, when not empty, lists path.Match patterns of the tools the
	// harness may see; tools matching none are hidden.
	Expose []string
	// Hide lists patterns of tools the harness never sees or calls through
	// the Server; Catalog.Call still reaches them (e.g. for a rubric).
	Hide []string
}

// Entry is one tool of the catalog.
type Entry struct {
	// Served is the name the harness sees (Prefix+Upstream for a tool
	// shadowing a built-in, else Upstream).
	Served string
	// Upstream is the tool's name at its source.
	Upstream string
	// Source is the name of the source serving it.
	Source string
	// Tool is the upstream definition (Tool.Name is the upstream name).
	Tool Tool
	// Hidden tools are not listed or callable through the Server.
	Hidden bool
}

// Catalog is the resolved, immutable set of tools of a group of sources.
// It is safe for concurrent use. It does not own the sources: callers
// close them.
type Catalog struct {
	entries []Entry // sorted by Served
	served  []Entry // entries not hidden
	byName  map[string]int
	sources map[string]Source
}

// NewCatalog starts every source (Source.Start is idempotent), lists their
// tools and applies, in order: reserved names (reset, step, state, close)
// are rejected; a name used twice is rejected naming both sources; a tool
// named like a harness built-in is renamed Prefix+name, which must itself be
// free; then expose/hide patterns mark hidden tools. The rules apply to
// hidden tools as well, so that every name of the catalog is unambiguous
// for Call. Errors are *NameError (ErrReservedName, ErrDuplicateTool,
// ErrNameConflict) or wrap the failing source's error.
func NewCatalog(ctx context.Context, sources []Source, opts CatalogOptions) (*Catalog, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	for _, pats := range [][]string{opts.Expose, opts.Hide} {
		for _, p := range pats {
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("tool pattern %q: %w", p, err)
			}
		}
	}
	c := &Catalog{byName: map[string]int{}, sources: map[string]Source{}}
	type found struct {
		source string
		tool   Tool
	}
	var all []found
	for _, src := range sources {
		if src == nil {
			return nil, errors.New("catalog: nil source")
		}
		name := src.Name()
		if _, dup := c.sources[name]; dup {
			return nil, fmt.Errorf("catalog: two sources are named '%s'", name)
		}
		c.sources[name] = src
		if err := src.Start(ctx); err != nil {
			return nil, fmt.Errorf("catalog: source '%s': %w", name, err)
		}
		tools, err := src.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: source '%s': %w", name, err)
		}
		for _, t := range tools {
			if t.Name == "" {
				return nil, fmt.Errorf("catalog: source '%s': %w: a tool has no name", name, ErrInvalidTool)
			}
			all = append(all, found{name, t})
		}
	}

	// 1. Reserved names.
	var reserved, reservedSrc []string
	for _, f := range all {
		if slices.Contains(ReservedNames, f.tool.Name) {
			if !slices.Contains(reserved, f.tool.Name) {
				reserved = append(reserved, f.tool.Name)
			}
			if !slices.Contains(reservedSrc, f.source) {
				reservedSrc = append(reservedSrc, f.source)
			}
		}
	}
	if len(reserved) > 0 {
		return nil, reservedError(reserved, reservedSrc)
	}
	// 2. Duplicates.
	owner := map[string]string{} // upstream name -> source
	for _, f := range all {
		if first, dup := owner[f.tool.Name]; dup {
			return nil, duplicateError(f.tool.Name, first, f.source)
		}
		owner[f.tool.Name] = f.source
	}
	// 3. Built-in shadowing, and 4. (defensive) clashes after renaming.
	builtin := map[string]bool{}
	for _, b := range opts.Builtins {
		builtin[b] = true
	}
	servedBy := map[string]string{}
	for _, f := range all {
		served := f.tool.Name
		if builtin[served] {
			renamed := opts.Prefix + served
			if builtin[renamed] {
				return nil, alsoTakenError(served, renamed, f.source, "")
			}
			if other, taken := owner[renamed]; taken {
				return nil, alsoTakenError(served, renamed, f.source, other)
			}
			served = renamed
		}
		if first, dup := servedBy[served]; dup {
			return nil, afterPrefixError(served, first, f.source)
		}
		servedBy[served] = f.source
		e := Entry{Served: served, Upstream: f.tool.Name, Source: f.source, Tool: f.tool}
		e.Hidden = (len(opts.Expose) > 0 && !matchAny(opts.Expose, e)) || matchAny(opts.Hide, e)
		c.entries = append(c.entries, e)
	}
	sort.Slice(c.entries, func(i, j int) bool { return c.entries[i].Served < c.entries[j].Served })
	for i, e := range c.entries {
		c.byName[e.Served] = i
		if !e.Hidden {
			c.served = append(c.served, e)
		}
	}
	// Upstream names answer too (daemon side), unless that name is some
	// other entry's served name (impossible after rule 3, kept defensive).
	for i, e := range c.entries {
		if _, taken := c.byName[e.Upstream]; !taken {
			c.byName[e.Upstream] = i
		}
	}
	return c, nil
}

// matchAny says whether any of patterns matches e (Entry.Matches).
func matchAny(patterns []string, e Entry) bool {
	return slices.ContainsFunc(patterns, e.Matches)
}

// Matches says whether the expose or hide pattern (path.Match syntax)
// matches the tool by its upstream name, its served name, or
// "server/upstream".
func (e Entry) Matches(pattern string) bool {
	for _, name := range []string{e.Upstream, e.Served, e.Source + "/" + e.Upstream} {
		if ok, _ := path.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

// Entries returns every tool, hidden ones included, sorted by served name.
func (c *Catalog) Entries() []Entry { return slices.Clone(c.entries) }

// Served returns the tools the harness may see, sorted by served name.
func (c *Catalog) Served() []Entry { return slices.Clone(c.served) }

// Lookup finds a tool by served or upstream name, hidden ones included.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	i, ok := c.byName[name]
	if !ok {
		return Entry{}, false
	}
	return c.entries[i], true
}

// Source returns the catalog's source of that name.
func (c *Catalog) Source(name string) (Source, bool) {
	s, ok := c.sources[name]
	return s, ok
}

// Call calls a tool by served or upstream name, hidden tools included: it
// is the daemon's path (a rubric's grader, a setup step), not the
// harness's. args must be empty or a JSON object.
func (c *Catalog) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	e, ok := c.Lookup(name)
	if !ok {
		return nil, opErr(ErrUnknownTool, nil, "unknown tool '%s'", name)
	}
	return c.call(ctx, e, args)
}

// call calls entry e at its source.
func (c *Catalog) call(ctx context.Context, e Entry, args json.RawMessage) (*mcp.CallToolResult, error) {
	if err := checkArgs(args); err != nil {
		return nil, opErr(err, nil, "tool '%s': %v", e.Served, err)
	}
	res, err := c.sources[e.Source].Call(ctx, e.Upstream, args)
	if err == nil && res == nil {
		err = opErr(ErrUpstream, nil, "tool '%s' of '%s' returned no result", e.Upstream, e.Source)
	}
	return res, err
}

func checkArgs(args json.RawMessage) error {
	if len(args) == 0 {
		return nil
	}
	trimmed := bytes.TrimLeft(args, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(args) {
		return ErrBadArguments
	}
	return nil
}
