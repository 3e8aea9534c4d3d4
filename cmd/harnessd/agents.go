package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/process/probe"
)

func init() {
	register("agents", "list the agent presets and whether each is installed", runAgents)
}

// agentRow is one preset as `harnessd agents` reports it.
type agentRow struct {
	Name      string   `json:"name"`
	Title     string   `json:"title"`
	Adapter   string   `json:"adapter"`
	Command   []string `json:"command"`
	Package   string   `json:"package,omitempty"`
	Verified  string   `json:"verified_version,omitempty"`
	Installed bool     `json:"installed"`
	Path      string   `json:"path,omitempty"`
	Source    string   `json:"source,omitempty"`
	Version   string   `json:"version,omitempty"`
}

func runAgents(args []string) int {
	c := newCLI("agents", "harnessd agents [--agents-dir DIR] [--json]\n\n"+
		"Lists the agent presets (harnessd serve --agent NAME): the adapter that drives each, its command,\n"+
		"and where its program was found (agents dir first, then PATH). Nothing is executed.")
	fs := c.fs
	dir := fs.String("agents-dir", "", "`directory` where agent programs are installed: a node_modules/.bin directory or one holding it (default $"+agents.DirEnvVar+")")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, done := c.parse(args); done {
		return code
	}
	if code, done := c.noArgs(); done {
		return code
	}
	x, err := linked()
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd agents:", err)
		return exitFailure
	}
	d := agents.AgentsDir(*dir)
	var rows []agentRow
	for _, p := range x.presets.All() {
		r := agentRow{Name: p.Name, Title: p.Title, Adapter: p.Adapter, Command: p.Command(p.Program), Package: p.Package}
		if p.Verified {
			r.Verified = p.Version
		}
		if in, ok := agents.Locate(p, d, ""); ok {
			r.Installed, r.Path, r.Source, r.Version = true, in.Path, in.Source, in.Version
		}
		rows = append(rows, r)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rows); err != nil {
			return exitFailure
		}
		return exitOK
	}
	printAgents(os.Stdout, rows, d)
	return exitOK
}

func printAgents(w io.Writer, rows []agentRow, dir string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tADAPTER\tCOMMAND\tVERIFIED\tINSTALLED")
	for _, r := range rows {
		verified := "no"
		if r.Verified != "" {
			verified = r.Verified
		}
		installed := "no"
		if r.Installed {
			installed = r.Path
			if r.Version != "" {
				installed = r.Version + "  " + installed
			}
		}
		command := strings.Join(r.Command, " ")
		if r.Adapter == "claude" {
			command += " (+ stream-json flags)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Adapter, command, verified, installed)
	}
	tw.Flush()
	if dir == "" {
		fmt.Fprintf(w, "\nSearched PATH only; give --agents-dir DIR (or set $%s) for agents installed with npm.\n", agents.DirEnvVar)
	} else {
		fmt.Fprintf(w, "\nSearched %s, then PATH.\n", dir)
	}
	fmt.Fprintln(w, "Run one: harnessd serve --agent NAME --model-url URL [--model NAME] [--model-api-key-env VAR] [--tool ...]")
}

// agentLister answers harnessd check's question of which agent presets
// are installed, looking in dir (else $HARNESSD_AGENTS_DIR), then on PATH,
// as harnessd agents does. It runs under check's probe deadline and honours
// ctx.
func agentLister(dir string) func(ctx context.Context) []probe.Agent {
	return func(ctx context.Context) []probe.Agent {
		d := agents.AgentsDir(dir)
		x, _ := linked() // what was linked, even if inconsistently
		var out []probe.Agent
		for _, p := range x.presets.All() {
			if ctx.Err() != nil {
				break
			}
			info := probe.Agent{Name: p.Name, Command: p.Program}
			if in, ok := agents.Locate(p, d, ""); ok {
				info.Installed, info.Path, info.Version = true, in.Path, in.Version
			} else if p.Package != "" {
				info.Note = "npm i -g " + p.Package
			}
			if !info.Installed && d == "" {
				info.Note = strings.TrimPrefix(info.Note+"; searched PATH only (--agents-dir DIR)", "; ")
			}
			out = append(out, info)
		}
		return out
	}
}
