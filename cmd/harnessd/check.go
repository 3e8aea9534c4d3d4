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

	"github.com/harnessd/harnessd/process"
)

func init() {
	register("check", "report the isolation and kill mechanisms this machine offers; exit 3 if a required one is missing", runCheck)
}

// agentInfo is one known agent preset and whether its program is installed
// here, as harnessd check reports it.
type agentInfo struct {
	// Name is the preset's name (what --agent and harness.agent take).
	Name string `json:"name"`
	// Command is the program the preset runs.
	Command string `json:"command"`
	// Installed reports that Command was found.
	Installed bool `json:"installed"`
	// Path is where Command was found.
	Path string `json:"path,omitempty"`
	// Version is what the program says its version is, when cheap to ask.
	Version string `json:"version,omitempty"`
	// Note explains a missing or unusable agent (e.g. "npm i -g ...").
	Note string `json:"note,omitempty"`
}

// listAgents reports the known agent presets and whether each one's program
// is installed. It is the hook for the agent presets (harness/agents): while
// it is nil, check says that this build knows no presets instead of listing
// agents. Wire it from an init function in this package, mapping the presets'
// own report onto agentInfo. It runs under check's probe deadline: it must
// honour ctx, and a panic in it is reported, not raised.
var listAgents func(ctx context.Context) []agentInfo

// checkReport is harnessd check's finding (its --json output).
type checkReport struct {
	Version string `json:"version"`
	// KillMode is the supervisor's kill mode in this configuration, as
	// harnessd serve logs it ("cgroup+subreaper+pgroup").
	KillMode string `json:"kill_mode"`
	// Checks maps each mechanism to its finding.
	Checks map[string]checkItem `json:"checks"`
	// Cgroup details the cgroup v2 setup.
	Cgroup process.CgroupInfo `json:"cgroup"`
	// PID describes the PID namespace.
	PID pidInfo `json:"pid"`
	// UID is the effective user id (cgroup writes usually need 0).
	UID int `json:"uid"`
	// Agents lists the known agents; null when this build has no presets.
	Agents     []agentInfo `json:"agents"`
	AgentsNote string      `json:"agents_note,omitempty"`
	// Required lists the required mechanisms; Unmet those not verified or
	// available.
	Required []string `json:"required"`
	Unmet    []string `json:"unmet"`
	// OK is false when a requirement is unmet or a probe failed.
	OK bool `json:"ok"`
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
		if !slices.Contains(mechanismNames, n) {
			return fmt.Errorf("unknown mechanism %q (want %s)", n, strings.Join(mechanismNames, ", "))
		}
		if !slices.Contains(*r, n) {
			*r = append(*r, n)
		}
	}
	return nil
}

func runCheck(args []string) int {
	var about strings.Builder
	about.WriteString("harnessd check [flags]\n\n" +
		"Probes which isolation and kill mechanisms this machine offers, with the same --cgroup/--subreaper\n" +
		"settings serve would use, and attacks the live configuration: a throwaway process tree with a\n" +
		"setsid escapee and an orphan must be ended by a stop. Probes leave nothing behind.\n\n" +
		"Statuses: verified (exercised, worked), available (present, not exercised), missing, failed\n" +
		"(present but did not work), off (disabled by a flag).\n\n" +
		"Exit codes: 0 all requirements met; 3 a required mechanism is missing or failed; 1 a probe failed\n" +
		"(a mechanism that claims to work did not); 2 usage.\n\nMechanisms:\n")
	for _, n := range mechanismNames {
		fmt.Fprintf(&about, "  %-15s %s\n", n, mechanismHelp[n])
	}
	c := newCLI("check", about.String())
	fs := c.fs
	var iso isolationFlags
	var lf logFlags
	var req requireFlag
	iso.register(fs)
	lf.register(fs)
	lf.level = "error"
	fs.Var(&req, "require", "comma-separated `mechanisms` that must be verified or available (repeatable): "+strings.Join(mechanismNames, ", "))
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, done := c.parse(args); done {
		return code
	}
	if code, done := c.noArgs(); done {
		return code
	}
	log, err := lf.logger(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd check:", err)
		return exitUsage
	}
	opts, required, err := iso.checkOptions(log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd check:", err)
		return exitUsage
	}
	for _, n := range required {
		req.Set(n)
	}
	rep, err := runChecks(opts, req, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd check:", err)
		return exitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		rep.writeTable(os.Stdout)
	}
	return rep.exitCode()
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
		required = append(required, mechCgroup)
	}
	if sr == process.ModeRequired {
		sr = process.ModeAuto
		required = append(required, mechSubreaper)
	}
	return process.Options{Cgroup: cg, Subreaper: sr, ReapOrphans: f.reapOrphans, Logger: log}, required, nil
}

// runChecks probes the mechanisms with a supervisor made from opts. With all
// false only the mechanisms named in required are probed (serve --require).
func runChecks(opts process.Options, required []string, all bool) (*checkReport, error) {
	want := func(n string) bool { return all || slices.Contains(required, n) }
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for probe children: %w", err)
	}
	rep := &checkReport{
		Version:  buildVersion(),
		Checks:   map[string]checkItem{},
		PID:      readPIDInfo(),
		UID:      os.Geteuid(),
		Required: append([]string{}, required...),
		Unmet:    []string{},
	}
	if want(mechCgroup) {
		rep.Cgroup = process.ProbeCgroup(opts.CgroupRoot)
	}
	sup, err := process.NewSupervisor(opts)
	if err != nil {
		return nil, err
	}
	defer sup.Close(context.Background(), 0)
	mech := sup.Mechanisms()
	rep.KillMode = mech.KillMode()

	// Findings that need no probe of their own.
	rep.Checks[mechProcessGroups] = checkItem{Status: statusAvailable}
	switch {
	case mech.Subreaper:
		rep.Checks[mechSubreaper] = checkItem{Status: statusAvailable}
	case opts.Subreaper == process.ModeOff:
		rep.Checks[mechSubreaper] = checkItem{Status: statusOff, Detail: "--subreaper off"}
	default:
		rep.Checks[mechSubreaper] = checkItem{Status: statusMissing, Detail: noteFor(mech.Notes, "subreaper:")}
	}
	switch {
	case mech.Cgroup:
		rep.Checks[mechCgroup] = checkItem{Status: statusAvailable, Detail: mech.CgroupPath}
	case opts.Cgroup == process.ModeOff:
		rep.Checks[mechCgroup] = checkItem{Status: statusOff, Detail: "--cgroup off"}
	default:
		d := noteFor(mech.Notes, "cgroup:")
		if rep.Cgroup.Error != "" {
			d = rep.Cgroup.Error
		}
		if rep.UID != 0 && d != "" {
			d += " (not root: cgroup writes usually need root or a delegated cgroup)"
		}
		rep.Checks[mechCgroup] = checkItem{Status: statusMissing, Detail: d}
	}
	rep.Checks[mechPID1] = pid1Item(rep.PID)

	if want(mechKill) || want(mechProcessGroups) || want(mechSubreaper) || want(mechCgroup) {
		tf := probeWithin(treeTimeout, func(ctx context.Context) treeFindings {
			return probeTree(ctx, sup, self)
		}, failedTree)
		rep.Checks[mechKill] = tf.kill
		rep.Checks[mechProcessGroups] = tf.groups
		if tf.subreaper.Status != "" {
			rep.Checks[mechSubreaper] = tf.subreaper
		}
		if tf.cgroup.Status != "" {
			rep.Checks[mechCgroup] = tf.cgroup
		}
	}
	if want(mechPdeathsig) {
		rep.Checks[mechPdeathsig] = runProbe(probeTimeout, func(ctx context.Context) checkItem {
			return probePdeathsig(ctx, sup, self)
		})
	}
	if want(mechPTY) {
		rep.Checks[mechPTY] = runProbe(probeTimeout, func(ctx context.Context) checkItem {
			return probePTY(ctx, sup, self)
		})
	}
	if want(mechUserns) {
		rep.Checks[mechUserns] = runProbe(probeTimeout, func(ctx context.Context) checkItem {
			return probeUserns(ctx, self)
		})
	}
	if all {
		rep.Agents, rep.AgentsNote = probeAgents()
	}

	rep.OK = true
	for _, n := range required {
		if !rep.Checks[n].met() {
			rep.Unmet = append(rep.Unmet, n)
			rep.OK = false
		}
	}
	for _, it := range rep.Checks {
		if it.Status == statusFailed {
			rep.OK = false
		}
	}
	return rep, nil
}

// probeAgents calls the listAgents hook under a deadline.
func probeAgents() ([]agentInfo, string) {
	if listAgents == nil {
		return nil, "this build knows no agent presets"
	}
	type result struct {
		agents []agentInfo
		err    string
	}
	r := probeWithin(10*time.Second, func(ctx context.Context) result {
		return result{agents: listAgents(ctx)}
	}, func(detail string) result { return result{err: detail} })
	if r.err != "" {
		return nil, "listing agents failed: " + r.err
	}
	if r.agents == nil {
		r.agents = []agentInfo{}
	}
	return r.agents, ""
}

// exitCode: 3 when a requirement is unmet, 1 when a probe failed, else 0.
func (r *checkReport) exitCode() int {
	if len(r.Unmet) > 0 {
		return exitMissing
	}
	if !r.OK {
		return exitFailure
	}
	return exitOK
}

// writeTable prints the report for people.
func (r *checkReport) writeTable(w io.Writer) {
	fmt.Fprintf(w, "harnessd check  %s (%s, %s/%s)  pid %d  uid %d\n\n", r.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH, r.PID.PID, r.UID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MECHANISM\tSTATUS\tREQUIRED\tDETAIL")
	for _, n := range mechanismNames {
		it, ok := r.Checks[n]
		if !ok {
			continue
		}
		reqd := ""
		if slices.Contains(r.Required, n) {
			reqd = "yes"
			if !it.met() {
				reqd = "UNMET"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, it.Status, reqd, it.Detail)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nkill mode: %s\n", r.KillMode)
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
