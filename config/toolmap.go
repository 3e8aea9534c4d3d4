package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The environment's modes: which side of a mapped tool entry serves (and,
// for harnessd serve, which surfaces the server offers).
const (
	ModeSimulation = "simulation"
	ModeProduction = "production"
)

// ToolServer is one side of a mapped tool entry (ToolConfig.Simulation,
// ToolConfig.Production): a stdio command or an HTTP URL, with the fields
// a plain entry has for either.
type ToolServer struct {
	Command   []string          `yaml:"command" json:"command,omitempty"`
	Env       map[string]string `yaml:"env" json:"env,omitempty"`
	Dir       string            `yaml:"dir" json:"dir,omitempty"`
	URL       string            `yaml:"url" json:"url,omitempty"`
	Headers   map[string]string `yaml:"headers" json:"headers,omitempty"`
	Isolation string            `yaml:"isolation" json:"isolation,omitempty"`
	Network   bool              `yaml:"network" json:"network,omitempty"`
}

// Mapped reports a tool entry that names a simulation and a production
// server for the same tools.
func (t *ToolConfig) Mapped() bool { return t.Simulation != nil || t.Production != nil }

// Side returns the mapped entry's server for mode (nil for a plain entry).
func (t *ToolConfig) Side(mode string) *ToolServer {
	if mode == ModeProduction {
		return t.Production
	}
	return t.Simulation
}

// Describe is one side of a mapped entry in words: its command or URL.
func (s *ToolServer) Describe() string {
	if s == nil {
		return "none"
	}
	if len(s.Command) > 0 {
		return "command " + strings.Join(s.Command, " ")
	}
	return "url " + s.URL
}

// EffectiveMode is the configuration's mode: mode:, simulation when unset.
func (c *Config) EffectiveMode() string {
	if c.Mode == "" {
		return ModeSimulation
	}
	return c.Mode
}

// SetMode changes the configuration's mode (a daemon's --mode) and selects
// the mapped tool entries' servers again.
func (c *Config) SetMode(mode string) error {
	c.Mode = mode
	return errors.Join(c.validateMode(), c.selectMapped())
}

func (c *Config) validateMode() error {
	switch c.Mode {
	case "", ModeSimulation, ModeProduction:
		return nil
	}
	return fmt.Errorf("mode must be %s or %s, not %q", ModeSimulation, ModeProduction, c.Mode)
}

// selectMapped copies the selected side of every mapped tool entry into
// the entry's own fields (which every consumer of Tools reads), so that
// the harness is served the mode's server under the entry's name. An
// entry must not set both a side and the plain fields.
func (c *Config) selectMapped() error {
	var errs []error
	for i := range c.Tools {
		t := &c.Tools[i]
		if !t.Mapped() {
			continue
		}
		if !t.selected {
			t.baseDir = t.Dir
		}
		if !t.selected && (len(t.Command) > 0 || t.URL != "" || len(t.Env) > 0 || len(t.Headers) > 0 || t.Isolation != "" || t.Network) {
			errs = append(errs, fmt.Errorf("tools[%d] %q: a mapped entry (simulation:, production:) sets command, url, env, headers, isolation and network in each side, not beside them", i, t.Name))
			continue
		}
		if t.Simulation == nil || t.Production == nil {
			errs = append(errs, fmt.Errorf("tools[%d] %q: a mapped entry needs both sides (simulation and production)", i, t.Name))
			continue
		}
		for _, side := range []struct {
			name string
			s    *ToolServer
		}{{"simulation", t.Simulation}, {"production", t.Production}} {
			if (len(side.s.Command) == 0) == (side.s.URL == "") {
				errs = append(errs, fmt.Errorf("tools[%d] %q: %s: exactly one of command or url is required", i, t.Name, side.name))
			}
		}
		*t = t.WithSide(c.EffectiveMode())
		t.selected = true
	}
	return errors.Join(errs...)
}

// Mapping is one mapped tool entry as harnessd validate shows it.
type Mapping struct {
	// Index and Name are the entry's.
	Index int
	Name  string
	// Simulation and Production are the two servers.
	Simulation, Production ToolServer
	// Selected is the side the configuration's mode serves.
	Selected string
}

// Mappings lists the configuration's mapped tool entries.
func (c *Config) Mappings() []Mapping {
	var out []Mapping
	for i, t := range c.Tools {
		if !t.Mapped() || t.Simulation == nil || t.Production == nil {
			continue
		}
		out = append(out, Mapping{Index: i, Name: t.Name, Simulation: *t.Simulation, Production: *t.Production, Selected: c.EffectiveMode()})
	}
	return out
}

// WithSide returns the entry t with the server of side mode in its own
// fields (for starting either side of a mapped entry, e.g. to compare
// their tools).
func (t ToolConfig) WithSide(mode string) ToolConfig {
	s := t.Side(mode)
	if s == nil {
		return t
	}
	t.Command, t.Env, t.URL, t.Headers = s.Command, s.Env, s.URL, s.Headers
	t.Isolation, t.Network = s.Isolation, s.Network
	if s.Dir != "" {
		t.Dir = s.Dir
	} else {
		t.Dir = t.baseDir
	}
	return t
}

// DescribeEnvironmentSide lists, for harnessd validate, the mapped tool
// entries (both servers, the one the mode serves, and whether the two were
// compared: uncompared names those with a side out of reach) and the
// simulated user.
func (c *Config) DescribeEnvironmentSide(uncompared []string) []string {
	var out []string
	for _, m := range c.Mappings() {
		compared := "same tool names and schemas"
		if slices.Contains(uncompared, m.Name) {
			compared = "not compared: a side could not be reached"
		}
		out = append(out, fmt.Sprintf("tool mapping %q: simulation %s; production %s; mode %s serves %s (%s)",
			m.Name, m.Simulation.Describe(), m.Production.Describe(), c.EffectiveMode(), m.Selected, compared))
	}
	if c.User != nil {
		out = append(out, "simulated user: "+c.User.Describe())
	}
	return out
}
