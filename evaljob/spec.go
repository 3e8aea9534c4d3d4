package evaljob

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/tasks"
)

// Spec defines a job's trials and what their results mean: job.json holds
// it, and a resumed job must have the same one (Diff).
type Spec struct {
	// Tasks are the tasksets, in the order given.
	Tasks []tasks.Source `json:"tasks"`
	// TaskIDs are the ids of every task of Tasks, in load order (Run fills
	// them in).
	TaskIDs []string `json:"task_ids"`
	// Agents are the agents evaluated, in the order given.
	Agents []Agent `json:"agents"`
	// Attempts is k: how many trials each agent gets at each task.
	Attempts int `json:"attempts"`
	// Settings are the environment's settings the agents' configurations
	// were built from (the command line's model, limit and harness flags,
	// as given); they are compared, not interpreted.
	Settings []string `json:"settings,omitempty"`
}

// Agent is one agent of a job: a preset, a harness command, the
// configuration file's harness (neither set), or the oracle.
type Agent struct {
	// Name labels the agent's trials and rows; unique within a job.
	Name string `json:"name"`
	// Oracle says the agent is the task's solution/solve.sh, run as
	// `harnessd run --task DIR --oracle` runs it (Oracle).
	Oracle bool `json:"oracle,omitempty"`
	// Preset is the agent preset's name (harness.agent), when it is one.
	Preset string `json:"preset,omitempty"`
	// Command is the harness command, when it is one.
	Command []string `json:"command,omitempty"`
	// Config builds a fresh configuration of the agent's environment with
	// no tasks: set; Run adds the taskset and the record directory and
	// normalizes it. Unused (and may be nil) for the oracle.
	Config func() (*config.Config, error) `json:"-"`
}

// validate checks what Run needs of s.
func (s *Spec) validate() error {
	var errs []error
	if len(s.Tasks) == 0 {
		errs = append(errs, errors.New("no tasks: give --tasks"))
	}
	if len(s.Agents) == 0 {
		errs = append(errs, errors.New("no agents: give --agent or --oracle"))
	}
	if s.Attempts < 1 {
		errs = append(errs, fmt.Errorf("attempts must be at least 1, not %d", s.Attempts))
	}
	seen := map[string]bool{}
	for i, a := range s.Agents {
		switch {
		case a.Name == "":
			errs = append(errs, fmt.Errorf("agent %d has no name", i+1))
		case seen[a.Name]:
			errs = append(errs, fmt.Errorf("agent name %q used twice", a.Name))
		case !a.Oracle && a.Config == nil:
			errs = append(errs, fmt.Errorf("agent %q: no configuration", a.Name))
		}
		seen[a.Name] = true
	}
	return errors.Join(errs...)
}

// Diff names the first field in which o (a job directory's job.json)
// differs from s, with both values; "" when they define the same job.
func (s *Spec) Diff(o *Spec) string {
	a, b := s.comparable(), o.comparable()
	for _, f := range []struct {
		name string
		x, y any
	}{
		{"tasks", a.Tasks, b.Tasks},
		{"task_ids", a.TaskIDs, b.TaskIDs},
		{"agents", a.Agents, b.Agents},
		{"attempts", a.Attempts, b.Attempts},
		{"settings", a.Settings, b.Settings},
	} {
		if !reflect.DeepEqual(f.x, f.y) {
			return fmt.Sprintf("%s: the job has %s, this command %s", f.name, jsonText(f.y), jsonText(f.x))
		}
	}
	return ""
}

// comparable is s with nil and empty lists alike and the agents' builders
// dropped, as a JSON round trip leaves it.
func (s *Spec) comparable() Spec {
	var c Spec
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &c)
	if len(c.Settings) == 0 {
		c.Settings = nil
	}
	c.TaskIDs = slices.Clip(c.TaskIDs)
	return c
}

// jsonText is v as compact JSON, for messages.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
