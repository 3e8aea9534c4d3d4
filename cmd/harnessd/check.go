package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/probe"
)

func init() {
	register("check", "report the isolation and kill mechanisms this machine offers; exit 3 if a required one is missing", runCheck)
}

func init() {
	register(probe.ChildCommand, "", probe.RunChild)
}

// requireFlag collects --require lists.
type requireFlag []string

func (r *requireFlag) String() string { return strings.Join(*r, ",") }

// Type names the value in the help when the usage has no `NAME`.
func (r *requireFlag) Type() string { return "list" }

func (r *requireFlag) Set(v string) error {
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(probe.Names, n) {
			return fmt.Errorf("unknown mechanism %q (want %s)", n, strings.Join(probe.Names, ", "))
		}
		if !slices.Contains(*r, n) {
			*r = append(*r, n)
		}
	}
	return nil
}

func runCheck(args []string) int {
	var about strings.Builder
	about.WriteString("harnessd check [flags]\nharnessd check [--adapter A] [--sandbox-ro PATH] -- CMD ARGS...\n\n" +
		"With a command after --, starts that harness once in a probe sandbox, as a reset would, and reports\n" +
		"what the sandbox bound back for it to run and, when it does not start, the hidden paths it needed\n" +
		"and the knobs that change that (sandbox.read_only, --isolation process); exit 0 when it started, 1\n" +
		"when it did not, 3 when no sandbox can be made here.\n\n" +
		"Probes which isolation and kill mechanisms this machine offers, with the same --cgroup/--subreaper\n" +
		"settings serve would use, and attacks the live configuration: a throwaway process tree with a\n" +
		"setsid escapee and an orphan must be ended by a stop. Probes leave nothing behind.\n\n" +
		"Statuses: verified (exercised, worked), available (present, not exercised), missing, failed\n" +
		"(present but did not work), off (disabled by a flag).\n\n" +
		"Exit codes: 0 all requirements met; 3 a required mechanism is missing or failed; 1 a probe failed\n" +
		"(a mechanism that claims to work did not); 2 usage.\n\nMechanisms:\n")
	for _, n := range probe.Names {
		fmt.Fprintf(&about, "  %-15s %s\n", n, probe.Help[n])
	}
	c := newCLI("check", about.String())
	fs := c.fs
	var iso isolationFlags
	var lf logFlags
	var req requireFlag
	iso.register(fs)
	lf.register(fs)
	lf.level = "error"
	fs.Var(&req, "require", "comma-separated `mechanisms` that must be verified or available (repeatable): "+strings.Join(probe.Names, ", "))
	asJSON := fs.Bool("json", false, "print the report as JSON")
	probeAdapter := fs.String("adapter", config.DefaultAdapter, "with -- CMD: the harness `protocol` the probe starts it with")
	probeStartup := fs.Duration("startup-timeout", 15*time.Second, "with -- CMD: how long the probe waits for the harness to be ready")
	probeRO := fs.StringArray("sandbox-ro", nil, "with -- CMD: a host `path` the sandboxed harness may read (repeatable), as sandbox.read_only")
	agentsDir := fs.String("agents-dir", "", "`directory` where agent programs are installed, as for harnessd agents (default $"+agents.DirEnvVar+")")
	if code, done := c.parse(args); done {
		return code
	}
	log, err := lf.logger(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd check:", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		probeArgs, err := c.harnessArgs()
		if err != nil {
			return c.usageError("%v", err)
		}
		p := &harnessProbe{adapter: *probeAdapter, startup: *probeStartup, readOnly: *probeRO}
		// A relative program is the caller's, as with run and serve, not
		// one inside the probe's workspace.
		return p.run(context.Background(), os.Stdout, log, absProgram(probeArgs))
	}
	opts, required, err := iso.checkOptions(log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd check:", err)
		return exitUsage
	}
	for _, n := range required {
		req.Set(n)
	}
	rep, err := probe.Run(probe.Config{Options: opts, Required: req, All: true, Version: buildVersion(), ListAgents: agentLister(*agentsDir)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd check:", err)
		return exitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		writeTable(os.Stdout, rep)
	}
	return exitCode(rep)
}

// checkOptions turns the isolation flags into supervisor options for a
// probe: "required" becomes "auto" plus a requirement, so that check reports
// a missing mechanism instead of refusing to start.
func (f *isolationFlags) checkOptions(log *slog.Logger) (process.Options, []string, error) {
	cg, err := parseMode(f.cgroup)
	if err != nil {
		return process.Options{}, nil, fmt.Errorf("--cgroup %w", err)
	}
	sr, err := parseMode(f.subreaper)
	if err != nil {
		return process.Options{}, nil, fmt.Errorf("--subreaper %w", err)
	}
	var required []string
	if cg == process.ModeRequired {
		cg = process.ModeAuto
		required = append(required, probe.Cgroup)
	}
	if sr == process.ModeRequired {
		sr = process.ModeAuto
		required = append(required, probe.Subreaper)
	}
	return process.Options{Cgroup: cg, Subreaper: sr, ReapOrphans: f.reapOrphans, Logger: log}, required, nil
}

// runRequired probes only the mechanisms named in required, with a
// supervisor made from opts (serve --require).
func runRequired(opts process.Options, required []string) (*probe.Report, error) {
	return probe.Run(probe.Config{Options: opts, Required: required, Version: buildVersion()})
}

// exitCode: 3 when a requirement is unmet, 1 when a probe failed, else 0.
func exitCode(r *probe.Report) int {
	if len(r.Unmet) > 0 {
		return exitMissing
	}
	if !r.OK {
		return exitFailure
	}
	return exitOK
}

// writeTable prints the report for people.
func writeTable(w io.Writer, r *probe.Report) {
	fmt.Fprintf(w, "harnessd check  %s (%s, %s/%s)  pid %d  uid %d\n\n", r.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH, r.PID.PID, r.UID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MECHANISM\tSTATUS\tREQUIRED\tDETAIL")
	for _, n := range probe.Names {
		it, ok := r.Checks[n]
		if !ok {
			continue
		}
		reqd := ""
		if slices.Contains(r.Required, n) {
			reqd = "yes"
			if !it.Met() {
				reqd = "UNMET"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, it.Status, reqd, it.Detail)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nkill mode: %s\n", r.KillMode)
	fmt.Fprintf(w, "peer check: %s\n", orDash(r.PeerCheck))
	switch r.Isolation {
	case "sandbox":
		fmt.Fprintln(w, "isolation: sandbox (what serve --isolation auto picks here: each harness tree in its own namespaces)")
	case "process":
		fmt.Fprintln(w, "isolation: process (no sandbox here, see the sandbox line; serve --isolation auto falls back to process, --isolation sandbox refuses to start)")
	}
	c := r.Cgroup
	if c.Root != "" || c.Error != "" {
		yn := map[bool]string{true: "yes", false: "no"}
		fmt.Fprintf(w, "cgroup v2: mount %s, own cgroup %s, directory %s, writable %s, cgroup.kill %s, controllers [%s]\n",
			orDash(c.Mount), orDash(c.Own), orDash(c.Root), yn[c.Writable], yn[c.Kill], strings.Join(c.Controllers, " "))
		if c.Error != "" {
			fmt.Fprintf(w, "           %s\n", c.Error)
		}
	}
	ns := "the initial PID namespace"
	if r.PID.NestedNamespace {
		ns = "a nested PID namespace"
	}
	fmt.Fprintf(w, "pid: %d in %s; PID 1 is %q\n", r.PID.PID, ns, r.PID.Init)
	switch {
	case r.Agents == nil:
		fmt.Fprintf(w, "agents: %s\n", r.AgentsNote)
	case len(r.Agents) == 0:
		fmt.Fprintln(w, "agents: none known")
	default:
		fmt.Fprintln(w, "agents:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, a := range r.Agents {
			state := "not installed"
			if a.Installed {
				state = "installed " + a.Path
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Name, state, a.Version, a.Note)
		}
		tw.Flush()
	}
	switch {
	case len(r.Unmet) > 0:
		fmt.Fprintf(w, "\nREFUSED: required mechanism(s) missing: %s\n", strings.Join(r.Unmet, ", "))
	case !r.OK:
		fmt.Fprintln(w, "\nFAILED: a mechanism that claims to work did not (see above)")
	case len(r.Required) > 0:
		fmt.Fprintf(w, "\nok: every required mechanism is present (%s)\n", strings.Join(r.Required, ", "))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
