package tasks

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/harnessd/harnessd/internal/environ"
)

// envTemplate is Harbor's ${VAR} / ${VAR:-default} value form
// (harbor.utils.env.resolve_env_vars): the whole value names a variable
// of the host's environment.
var envTemplate = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)(:-(.*))?\}$`)

// envName is a variable name harnessd passes on.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// resolveEnv returns m as sorted KEY=VALUE, each ${VAR} or ${VAR:-default}
// value resolved from the daemon's environment at load time, as Harbor
// resolves them from the host's when the trial starts; a variable that is
// not set and has no default is an error naming the key (Harbor's too).
func resolveEnv(section string, m map[string]string) ([]string, error) {
	var errs []error
	out := map[string]string{}
	for k, v := range m {
		if !envName.MatchString(k) {
			errs = append(errs, fmt.Errorf("%s.%s: not a variable name", section, k))
			continue
		}
		if strings.ContainsRune(v, 0) {
			errs = append(errs, fmt.Errorf("%s.%s: the value holds a NUL byte", section, k))
			continue
		}
		if g := envTemplate.FindStringSubmatch(v); g != nil {
			if hv, ok := os.LookupEnv(g[1]); ok {
				v = hv
			} else if g[2] != "" {
				v = g[3]
			} else {
				errs = append(errs, fmt.Errorf("%s.%s: the host variable %s is not set (and ${%s} gives no default)", section, k, g[1], g[1]))
				continue
			}
		}
		out[k] = v
	}
	return sortedEnv(out), errors.Join(errs...)
}

// mergeEnv is base with each of over set on top (a later value wins).
func mergeEnv(base []string, over ...[]string) []string {
	out := append([]string(nil), base...)
	for _, o := range over {
		for _, kv := range o {
			out = environ.Set(out, kv)
		}
	}
	return out
}

// Network modes of Harbor's network_mode.
const (
	NetworkPublic    = "public"
	NetworkNone      = "no-network"
	NetworkAllowlist = "allowlist"
)

// Network is a phase's network policy as the task states it (Harbor's
// NetworkPolicy): Mode is public, no-network or allowlist (Hosts).
type Network struct {
	Mode  string   `json:"mode"`
	Hosts []string `json:"allowed_hosts,omitempty"`
}

// Allows reports whether the policy lets the phase reach the network at
// all (public, or an allowlist with hosts).
func (n Network) Allows() bool {
	return n.Mode == NetworkPublic || (n.Mode == NetworkAllowlist && len(n.Hosts) > 0)
}

// baseline is a section's network policy: network_mode (allowed_hosts
// alone meaning allowlist), else allow_internet = false as no-network,
// else public.
func baseline(key string, mode *string, hosts []string, allowInternet *bool) (Network, error) {
	n, set, err := phase(key, mode, hosts)
	if err != nil || set {
		return n, err
	}
	if allowInternet != nil && !*allowInternet {
		return Network{Mode: NetworkNone}, nil
	}
	return Network{Mode: NetworkPublic}, nil
}

// phase is an [agent] or [verifier] override; set is false without one.
func phase(key string, mode *string, hosts []string) (Network, bool, error) {
	var hs []string
	for _, h := range hosts {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/:") {
			return Network{}, false, fmt.Errorf("%s.allowed_hosts %q: want a host name or an IPv4 address, not a URL, port or path", key, h)
		}
		hs = append(hs, h)
	}
	if mode == nil {
		if len(hs) > 0 {
			return Network{Mode: NetworkAllowlist, Hosts: hs}, true, nil
		}
		return Network{}, false, nil
	}
	switch *mode {
	case NetworkPublic, NetworkNone:
		if len(hs) > 0 {
			return Network{}, false, fmt.Errorf("%s.allowed_hosts is only valid with %s.network_mode = \"allowlist\"", key, key)
		}
		return Network{Mode: *mode}, true, nil
	case NetworkAllowlist:
		return Network{Mode: NetworkAllowlist, Hosts: hs}, true, nil
	}
	return Network{}, false, fmt.Errorf("%s.network_mode %q: want \"public\", \"no-network\" or \"allowlist\"", key, *mode)
}

// loadNetwork resolves the agent's and the verifier's network policies as
// Harbor does: the [environment] baseline (the separate verifier's own
// [verifier.environment] one), then each phase's override.
func (t *Task) loadNetwork(cfg taskTOML) []error {
	var errs []error
	env := cfg.Environment
	base, err := baseline("environment", env.NetworkMode, env.AllowedHosts, env.AllowInternet)
	errs = appendErr(errs, err)
	t.AgentNetwork = base
	if n, set, err := phase("agent", cfg.Agent.NetworkMode, cfg.Agent.AllowedHosts); err != nil {
		errs = append(errs, err)
	} else if set {
		t.AgentNetwork = n
	}
	vbase := base
	if ve := cfg.Verifier.Environment; ve != nil {
		vbase, err = baseline("verifier.environment", ve.NetworkMode, ve.AllowedHosts, ve.AllowInternet)
		errs = appendErr(errs, err)
	}
	t.VerifierNetwork = vbase
	if n, set, err := phase("verifier", cfg.Verifier.NetworkMode, cfg.Verifier.AllowedHosts); err != nil {
		errs = append(errs, err)
	} else if set {
		t.VerifierNetwork = n
	}
	// AllowInternet keeps its meaning for the harness's network policy.
	if env.AllowInternet != nil || env.NetworkMode != nil || cfg.Agent.NetworkMode != nil || len(env.AllowedHosts)+len(cfg.Agent.AllowedHosts) > 0 {
		v := t.AgentNetwork.Allows()
		t.AllowInternet = &v
	}
	if t.AgentNetwork.Mode == NetworkAllowlist {
		t.Warnings = append(t.Warnings, fmt.Sprintf("the agent's network allowlist (%s) is recorded, not applied: the harness's network is the environment's network: policy",
			strings.Join(t.AgentNetwork.Hosts, ", ")))
	}
	return errs
}

// loadVerifierMode reads [verifier] environment_mode and
// [verifier.environment]: "shared" (the default) grades the agent's
// workspace; "separate" grades in a fresh workspace that holds only the
// task's declared artifacts, as Harbor's separate verifier container
// receives them. A separate environment harnessd cannot build (an image,
// a Dockerfile it would have to run) is refused.
func (t *Task) loadVerifierMode(dir string, cfg taskTOML) []error {
	var errs []error
	v := cfg.Verifier
	mode := "shared"
	if v.Environment != nil {
		mode = "separate"
	}
	if v.EnvironmentMode != nil {
		switch *v.EnvironmentMode {
		case "shared":
			if v.Environment != nil {
				return []error{errors.New("task.toml verifier.environment_mode = \"shared\" conflicts with [verifier.environment] (Harbor refuses it too)")}
			}
			mode = "shared"
		case "separate":
			mode = "separate"
		default:
			return []error{fmt.Errorf("task.toml verifier.environment_mode %q: want \"shared\" or \"separate\"", *v.EnvironmentMode)}
		}
	}
	if mode != "separate" {
		return nil
	}
	t.Separate = true
	if ve := v.Environment; ve != nil {
		if ve.DockerImage != "" {
			errs = append(errs, errors.New("task.toml verifier.environment.docker_image is not supported: harnessd runs no images; the separate verifier runs on the host's files"))
		}
		for _, k := range []struct {
			key string
			set bool
		}{
			{"os", ve.OS != nil && !strings.EqualFold(*ve.OS, "linux")}, {"healthcheck", ve.Healthcheck != nil}, {"skills_dir", ve.SkillsDir != nil},
			{"tpu", ve.TPU != nil}, {"mcp_servers", len(ve.MCPServers) > 0}, {"workdir", ve.WorkDir != nil && path.Clean(*ve.WorkDir) != t.WorkDir},
		} {
			if k.set {
				errs = append(errs, fmt.Errorf("task.toml verifier.environment.%s is not supported: the separate verifier runs at the task's workdir with the host's files", k.key))
			}
		}
		if ve.CPUs != nil && *ve.CPUs > 0 {
			t.VerifierLimits.CPUs = *ve.CPUs
		}
		if ve.MemoryMB != nil && *ve.MemoryMB > 0 {
			t.VerifierLimits.MemoryMB = *ve.MemoryMB
		} else if ve.Memory != "" {
			mb, err := parseMemory(ve.Memory)
			if err != nil {
				errs = append(errs, fmt.Errorf("verifier.environment.memory %q: %w", ve.Memory, err))
			}
			t.VerifierLimits.MemoryMB = mb
		}
		e, err := resolveEnv("verifier.environment.env", ve.Env)
		errs = appendErr(errs, err)
		t.separateEnv = e
	}
	// The verifier's image is built from tests/ (its Dockerfile, when
	// there is one): harnessd honours its ENV and nothing else.
	if df := filepath.Join(dir, "tests", "Dockerfile"); exists(df) {
		d, err := parseDockerfile(dir, df, filepath.Join(dir, "tests"))
		if err != nil {
			errs = append(errs, fmt.Errorf("tests/Dockerfile: %w", err))
		} else {
			t.separateEnv = mergeEnv(d.env, t.separateEnv)
			for _, w := range d.warnings {
				t.Warnings = append(t.Warnings, "tests/Dockerfile: "+w)
			}
			if len(d.copies) > 0 {
				t.Warnings = append(t.Warnings, "tests/Dockerfile: COPY not honoured: tests/ is bound at /tests as it is")
			}
		}
	}
	t.Warnings = append(t.Warnings, "separate verifier: /logs/artifacts is not transferred (only the declared artifacts inside the workdir are)")
	return errs
}

// artifactPaths reads an artifacts list (strings, or tables with source
// and optionally destination); a table naming a compose service is
// refused (no sidecars run).
func artifactPaths(key string, list []any) ([]string, error) {
	var out []string
	var errs []error
	for i, a := range list {
		var src string
		switch v := a.(type) {
		case string:
			src = v
		case map[string]any:
			if s, ok := v["service"].(string); ok && s != "" && s != "main" {
				errs = append(errs, fmt.Errorf("task.toml %s[%d].service %q is not supported: compose services are not run", key, i, s))
				continue
			}
			s, _ := v["source"].(string)
			src = s
		}
		if src == "" || !path.IsAbs(src) {
			errs = append(errs, fmt.Errorf("%s[%d]: want an absolute path (or {source = PATH})", key, i))
			continue
		}
		out = append(out, path.Clean(src))
	}
	sort.Strings(out)
	return out, errors.Join(errs...)
}
