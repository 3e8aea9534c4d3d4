package probe

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/harnessd/harnessd/process"
)

// Agent is one known agent preset and whether its program is installed here.
type Agent struct {
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

// Config says what Run probes and how.
type Config struct {
	// Options configure the Supervisor the probes run through: the same
	// settings serve would use.
	Options process.Options
	// Required lists the mechanisms that must be verified or available.
	Required []string
	// All probes every mechanism and lists the agents; otherwise only the
	// mechanisms in Required are exercised.
	All bool
	// Self is the executable probe children are run from (see
	// ChildCommand); empty means os.Executable.
	Self string
	// Version is reported as is.
	Version string
	// ListAgents, when set, reports the known agent presets (with All). It
	// runs under a deadline: it must honour ctx; a panic in it is reported,
	// not raised. Nil means this build knows no presets.
	ListAgents func(ctx context.Context) []Agent
}

// Report is the finding of Run (harnessd check --json prints it).
type Report struct {
	Version string `json:"version"`
	// KillMode is the supervisor's kill mode in this configuration, as
	// harnessd serve logs it ("cgroup+subreaper+pgroup").
	KillMode string `json:"kill_mode"`
	// PeerCheck is how the orchestration routes tell a harness peer
	// (process.PeerCheckCgroup or process.PeerCheckAncestry).
	PeerCheck string `json:"peer_check"`
	// Isolation is the level harnessd serve --isolation auto would run
	// harnesses at here: "sandbox" when the sandbox probe verified it,
	// else "process" ("" when the sandbox was not probed).
	Isolation string `json:"isolation,omitempty"`
	// Checks maps each mechanism to its finding.
	Checks map[string]Item `json:"checks"`
	// Cgroup details the cgroup v2 setup.
	Cgroup process.CgroupInfo `json:"cgroup"`
	// PID describes the PID namespace.
	PID PIDInfo `json:"pid"`
	// UID is the effective user id (cgroup writes usually need 0).
	UID int `json:"uid"`
	// Agents lists the known agents; null when this build has no presets.
	Agents     []Agent `json:"agents"`
	AgentsNote string  `json:"agents_note,omitempty"`
	// Required lists the required mechanisms; Unmet those not verified or
	// available.
	Required []string `json:"required"`
	Unmet    []string `json:"unmet"`
	// OK is false when a requirement is unmet or a probe failed.
	OK bool `json:"ok"`
}

// Run probes the mechanisms with a Supervisor made from cfg.Options (closed
// before Run returns; every probe process is gone by then). It errors only
// when the probes cannot run at all.
func Run(cfg Config) (*Report, error) {
	want := func(n string) bool { return cfg.All || slices.Contains(cfg.Required, n) }
	self := cfg.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find own executable for probe children: %w", err)
		}
	}
	rep := &Report{
		Version:  cfg.Version,
		Checks:   map[string]Item{},
		PID:      ReadPIDInfo(),
		UID:      os.Geteuid(),
		Required: append([]string{}, cfg.Required...),
		Unmet:    []string{},
	}
	if want(Cgroup) {
		rep.Cgroup = process.ProbeCgroup(cfg.Options.CgroupRoot)
	}
	sup, err := process.NewSupervisor(cfg.Options)
	if err != nil {
		return nil, err
	}
	defer sup.Close(context.Background(), 0)
	mech := sup.Mechanisms()
	rep.KillMode = mech.KillMode()
	rep.PeerCheck = mech.PeerCheck
	baseItems(rep, mech, cfg.Options)

	if want(Kill) || want(ProcessGroups) || want(Subreaper) || want(Cgroup) {
		tf := within(treeTimeout, func(ctx context.Context) treeFindings {
			return probeTree(ctx, sup, self)
		}, failedTree)
		rep.settleTree(tf)
	}
	if want(Pdeathsig) {
		rep.Checks[Pdeathsig] = runProbe(probeTimeout, func(ctx context.Context) Item {
			return probePdeathsig(ctx, sup, self)
		})
	}
	if want(PTY) {
		rep.Checks[PTY] = runProbe(probeTimeout, func(ctx context.Context) Item {
			return probePTY(ctx, sup, self)
		})
	}
	if want(Userns) {
		rep.Checks[Userns] = runProbe(probeTimeout, func(ctx context.Context) Item {
			return probeUserns(ctx, self)
		})
	}
	if want(Sandbox) {
		rep.Checks[Sandbox] = runProbe(sandboxTimeout, func(ctx context.Context) Item {
			return probeSandbox(ctx)
		})
	}
	if want(DiskQuota) {
		rep.Checks[DiskQuota] = runProbe(probeTimeout, probeDiskQuota)
	}
	if want(CRIU) {
		rep.Checks[CRIU] = runProbe(probeTimeout, probeCRIU)
	}
	if cfg.All {
		rep.Agents, rep.AgentsNote = listAgents(cfg.ListAgents)
	}
	if it, ok := rep.Checks[Sandbox]; ok {
		rep.Isolation = "process"
		if it.Status == StatusVerified {
			rep.Isolation = "sandbox"
		}
	}
	rep.settle()
	return rep, nil
}

// baseItems fills in the findings that need no probe of their own, from
// what the Supervisor detected (the tree probe may overwrite them).
func baseItems(rep *Report, mech process.Mechanisms, opts process.Options) {
	rep.Checks[ProcessGroups] = Item{Status: StatusAvailable}
	switch {
	case mech.Subreaper:
		rep.Checks[Subreaper] = Item{Status: StatusAvailable}
	case opts.Subreaper == process.ModeOff:
		rep.Checks[Subreaper] = Item{Status: StatusOff, Detail: "--subreaper off"}
	default:
		rep.Checks[Subreaper] = Item{Status: StatusMissing, Detail: noteFor(mech.Notes, "subreaper:")}
	}
	switch {
	case mech.Cgroup:
		rep.Checks[Cgroup] = Item{Status: StatusAvailable, Detail: mech.CgroupPath}
	case opts.Cgroup == process.ModeOff:
		rep.Checks[Cgroup] = Item{Status: StatusOff, Detail: "--cgroup off"}
	default:
		d := noteFor(mech.Notes, "cgroup:")
		if rep.Cgroup.Error != "" {
			d = rep.Cgroup.Error
		}
		if rep.UID != 0 && d != "" {
			d += " (not root: cgroup writes usually need root or a delegated cgroup)"
		}
		rep.Checks[Cgroup] = Item{Status: StatusMissing, Detail: d}
	}
	rep.Checks[PID1] = pid1Item(rep.PID)
}

// settleTree records the tree attack's findings; items it did not settle
// keep their base finding.
func (r *Report) settleTree(tf treeFindings) {
	r.Checks[Kill] = tf.kill
	r.Checks[ProcessGroups] = tf.groups
	if tf.subreaper.Status != "" {
		r.Checks[Subreaper] = tf.subreaper
	}
	if tf.cgroup.Status != "" {
		r.Checks[Cgroup] = tf.cgroup
	}
}

// settle computes Unmet and OK from the checks.
func (r *Report) settle() {
	r.OK = true
	r.Unmet = []string{}
	for _, n := range r.Required {
		if !r.Checks[n].Met() {
			r.Unmet = append(r.Unmet, n)
			r.OK = false
		}
	}
	for _, it := range r.Checks {
		if it.Status == StatusFailed {
			r.OK = false
		}
	}
}

// listAgents calls the agent hook under a deadline.
func listAgents(list func(ctx context.Context) []Agent) ([]Agent, string) {
	if list == nil {
		return nil, "this build knows no agent presets"
	}
	type result struct {
		agents []Agent
		err    string
	}
	r := within(agentsTimeout, func(ctx context.Context) result {
		return result{agents: list(ctx)}
	}, func(detail string) result { return result{err: detail} })
	if r.err != "" {
		return nil, "listing agents failed: " + r.err
	}
	if r.agents == nil {
		r.agents = []Agent{}
	}
	return r.agents, ""
}
