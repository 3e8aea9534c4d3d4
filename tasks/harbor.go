package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/harnessd/harnessd/internal/environ"
	"github.com/harnessd/harnessd/internal/jsonshape"
)

// maxInstructionBytes bounds instruction.md.
const maxInstructionBytes = 1 << 20

// taskTOML is Harbor's task.toml as harnessd reads it (Harbor's
// TaskConfig, src/harbor/models/task/config.py): every key Harbor defines
// is either honoured, mapped, recorded, warned about (a hint with no
// effect here, such as build_timeout_sec) or refused with the key named
// (refusals in loadHarbor); a key Harbor does not define is a warning, as
// Harbor's own model ignores unknown keys.
type taskTOML struct {
	Version                 string         `toml:"version"`
	SchemaVersion           string         `toml:"schema_version"`
	Source                  string         `toml:"source"`
	Task                    taskSection    `toml:"task"`
	Metadata                map[string]any `toml:"metadata"`
	Verifier                verifierTOML   `toml:"verifier"`
	Agent                   agentTOML      `toml:"agent"`
	Solution                solutionTOML   `toml:"solution"`
	Environment             envTOML        `toml:"environment"`
	Artifacts               []any          `toml:"artifacts"`
	MultiStepRewardStrategy *string        `toml:"multi_step_reward_strategy"`
	Steps                   []stepTOML     `toml:"steps"`
}

type verifierTOML struct {
	TimeoutSec      *float64          `toml:"timeout_sec"`
	Env             map[string]string `toml:"env"`
	User            any               `toml:"user"`
	EnvironmentMode *string           `toml:"environment_mode"`
	Environment     *envTOML          `toml:"environment"`
	NetworkMode     *string           `toml:"network_mode"`
	AllowedHosts    []string          `toml:"allowed_hosts"`
	Collect         []map[string]any  `toml:"collect"`
}

type agentTOML struct {
	TimeoutSec   *float64 `toml:"timeout_sec"`
	User         any      `toml:"user"`
	NetworkMode  *string  `toml:"network_mode"`
	AllowedHosts []string `toml:"allowed_hosts"`
}

type solutionTOML struct {
	Env map[string]string `toml:"env"`
}

type envTOML struct {
	BuildTimeoutSec *float64          `toml:"build_timeout_sec"`
	DockerImage     string            `toml:"docker_image"`
	OS              *string           `toml:"os"`
	CPUs            *float64          `toml:"cpus"`
	MemoryMB        *int64            `toml:"memory_mb"`
	Memory          string            `toml:"memory"`
	StorageMB       *int64            `toml:"storage_mb"`
	Storage         string            `toml:"storage"`
	GPUs            *int64            `toml:"gpus"`
	GPUTypes        []string          `toml:"gpu_types"`
	TPU             map[string]any    `toml:"tpu"`
	AllowInternet   *bool             `toml:"allow_internet"`
	NetworkMode     *string           `toml:"network_mode"`
	AllowedHosts    []string          `toml:"allowed_hosts"`
	MCPServers      []MCPServer       `toml:"mcp_servers"`
	Env             map[string]string `toml:"env"`
	SkillsDir       *string           `toml:"skills_dir"`
	Healthcheck     map[string]any    `toml:"healthcheck"`
	WorkDir         *string           `toml:"workdir"`
}

type stepTOML struct {
	Name      string `toml:"name"`
	MinReward any    `toml:"min_reward"`
	Agent     struct {
		TimeoutSec   *float64 `toml:"timeout_sec"`
		User         any      `toml:"user"`
		NetworkMode  *string  `toml:"network_mode"`
		AllowedHosts []string `toml:"allowed_hosts"`
	} `toml:"agent"`
	Verifier    verifierTOML   `toml:"verifier"`
	Healthcheck map[string]any `toml:"healthcheck"`
	Artifacts   []any          `toml:"artifacts"`
}

type taskSection struct {
	Name        string           `toml:"name"`
	Description string           `toml:"description"`
	Authors     []map[string]any `toml:"authors"`
	Keywords    []string         `toml:"keywords"`
	Version     string           `toml:"version"`
}

// loadHarbor reads the Harbor task directory dir.
func loadHarbor(dir string) (*Task, error) {
	t := &Task{ID: filepath.Base(dir), Source: dir, VerifierTimeout: DefaultVerifierTimeout, hidden: []string{dir}}
	var cfg taskTOML
	b, err := readTaskFile(dir, filepath.Join(dir, "task.toml"), maxTaskTOMLBytes)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("no task directory: %w", serr)
		}
		return nil, fmt.Errorf("no task.toml in %s (a Harbor task directory holds task.toml, instruction.md and tests/)", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("task.toml: %w", err)
	}
	md, err := toml.Decode(string(b), &cfg)
	if err != nil {
		return nil, fmt.Errorf("task.toml: %w", err)
	}
	for _, k := range md.Undecoded() {
		t.Warnings = append(t.Warnings, fmt.Sprintf("task.toml %s ignored: harnessd does not know it", k))
	}
	var errs []error
	refuse := func(key, why string) {
		errs = append(errs, fmt.Errorf("task.toml %s is not supported: %s", key, why))
	}
	t.Name, t.Description, t.Metadata = cfg.Task.Name, cfg.Task.Description, cfg.Metadata
	errs = appendErr(errs, metadataShape(cfg.Metadata))
	if d, err := seconds("verifier.timeout_sec", cfg.Verifier.TimeoutSec); err != nil {
		errs = append(errs, err)
	} else if d > 0 {
		t.VerifierTimeout = d
	}
	if d, err := seconds("agent.timeout_sec", cfg.Agent.TimeoutSec); err != nil {
		errs = append(errs, err)
	} else {
		t.AgentTimeout = d
	}
	env := cfg.Environment
	venv, err := resolveEnv("verifier.env", cfg.Verifier.Env)
	errs = appendErr(errs, err)
	t.VerifierEnv = venv
	senv, err := resolveEnv("solution.env", cfg.Solution.Env)
	errs = appendErr(errs, err)
	t.SolutionEnv = senv
	if env.CPUs != nil {
		if *env.CPUs < 0 {
			errs = append(errs, fmt.Errorf("environment.cpus %v is negative", *env.CPUs))
		} else {
			t.Limits.CPUs = *env.CPUs
		}
	}
	switch {
	case env.MemoryMB != nil && *env.MemoryMB < 0:
		errs = append(errs, fmt.Errorf("environment.memory_mb %d is negative", *env.MemoryMB))
	case env.MemoryMB != nil:
		t.Limits.MemoryMB = *env.MemoryMB
	case env.Memory != "":
		mb, err := parseMemory(env.Memory)
		if err != nil {
			errs = append(errs, fmt.Errorf("environment.memory %q: %w", env.Memory, err))
		}
		t.Limits.MemoryMB = mb
	}
	for i, m := range env.MCPServers {
		if m.Name == "" {
			errs = append(errs, fmt.Errorf("environment.mcp_servers[%d]: no name", i))
		}
	}
	t.MCPServers = env.MCPServers
	if env.BuildTimeoutSec != nil {
		t.Warnings = append(t.Warnings, "environment.build_timeout_sec ignored: nothing is built")
	}
	if env.DockerImage != "" {
		t.Warnings = append(t.Warnings, "environment.docker_image ignored: the tests run on the host's (or harnessd's container's) files")
	}
	if env.StorageMB != nil || env.Storage != "" {
		t.Warnings = append(t.Warnings, "environment.storage_mb ignored: no disk quota")
	}
	if (env.GPUs != nil && *env.GPUs > 0) || len(env.GPUTypes) > 0 {
		t.Warnings = append(t.Warnings, "environment.gpus ignored: no devices are passed")
	}
	for _, m := range t.MCPServers {
		switch {
		case m.Command != "" && (m.Transport == "" || m.Transport == "stdio"):
		case m.URL != "" && (m.Transport == "streamable-http" || m.Transport == "http"):
		default:
			t.Warnings = append(t.Warnings, fmt.Sprintf("environment.mcp_servers %q ignored: only stdio commands and streamable-HTTP URLs are served (transport %q)", m.Name, m.Transport))
		}
	}
	// What harnessd cannot honour is refused, the key named: running the
	// task without it would grade something other than what it says.
	if env.OS != nil && !strings.EqualFold(*env.OS, "linux") {
		refuse("environment.os", fmt.Sprintf("%q: only linux tasks run here", *env.OS))
	}
	if env.Healthcheck != nil {
		refuse("environment.healthcheck", "harnessd runs no healthchecks before the agent")
	}
	if env.SkillsDir != nil {
		refuse("environment.skills_dir", "skills are not copied into the agent's configuration")
	}
	if env.TPU != nil {
		refuse("environment.tpu", "no devices are passed")
	}
	if len(cfg.Verifier.Collect) > 0 {
		refuse("verifier.collect", "collect hooks (commands in compose services after the agent) are not run")
	}
	if cfg.MultiStepRewardStrategy != nil {
		switch *cfg.MultiStepRewardStrategy {
		case StrategyMean, StrategyFinal:
			t.StepStrategy = *cfg.MultiStepRewardStrategy
		default:
			errs = append(errs, fmt.Errorf("multi_step_reward_strategy %q: want \"mean\" or \"final\"", *cfg.MultiStepRewardStrategy))
		}
	}
	envDir := filepath.Join(dir, "environment")
	for _, c := range []string{"docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"} {
		if exists(filepath.Join(envDir, c)) {
			refuse("environment/"+c, "compose services (sidecars) are not run: only the task's own environment is")
		}
	}

	t.WorkDir = DefaultWorkDir
	if df := filepath.Join(envDir, "Dockerfile"); exists(df) {
		d, err := parseDockerfile(dir, df, envDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("environment/Dockerfile: %w", err))
		} else {
			if d.workDir != "" {
				t.WorkDir = d.workDir
			}
			t.Env = d.env
			t.copies = d.copies
			t.Warnings = append(t.Warnings, d.warnings...)
		}
	} else {
		t.Warnings = append(t.Warnings, "no environment/Dockerfile: the workspace starts empty")
	}
	if env.WorkDir != nil {
		// Harbor: "Overrides the container's WORKDIR when set": the
		// directory every command runs in, and so the workspace's path.
		w := *env.WorkDir
		if !path.IsAbs(w) || strings.ContainsRune(w, 0) {
			errs = append(errs, fmt.Errorf("environment.workdir %q is not an absolute path", w))
		} else if w = path.Clean(w); w == "/" {
			errs = append(errs, errors.New("environment.workdir \"/\": the workspace cannot be the root"))
		} else {
			t.WorkDir = w
		}
	}
	if err := mountable(t.WorkDir); err != nil {
		t.Warnings = append(t.Warnings, err.Error())
	}
	for _, c := range t.copies {
		if !within(c.dst, t.WorkDir) && !(c.intoDir && within(path.Join(c.dst, filepath.Base(c.src)), t.WorkDir)) {
			t.Warnings = append(t.Warnings, fmt.Sprintf("COPY to %s not honoured: it lies outside WORKDIR %s (only the workspace is the task's)", c.dst, t.WorkDir))
		}
	}
	// environment.env is the container's environment in Harbor: the
	// agent's, the oracle's and a shared verifier's, over the image's ENV.
	eenv, err := resolveEnv("environment.env", env.Env)
	errs = appendErr(errs, err)
	for _, kv := range eenv {
		t.Env = environ.Set(t.Env, kv)
	}
	t.EnvironmentEnv = eenv
	errs = append(errs, t.loadNetwork(cfg)...)
	errs = append(errs, t.loadUsers(cfg)...)
	errs = append(errs, t.loadVerifierMode(dir, cfg)...)
	t.Artifacts, err = artifactPaths("artifacts", cfg.Artifacts)
	errs = appendErr(errs, err)

	if len(cfg.Steps) > 0 {
		errs = append(errs, t.loadSteps(dir, cfg)...)
	} else {
		errs = append(errs, t.loadSingle(dir)...)
		if cfg.MultiStepRewardStrategy != nil {
			t.Warnings = append(t.Warnings, "multi_step_reward_strategy ignored: the task has no [[steps]]")
		}
	}
	errs = append(errs, t.checkBeneath(dir)...)
	if err := t.assignIDs(); err != nil {
		errs = append(errs, err)
	}
	if t.Separate {
		for _, a := range t.allArtifacts() {
			if !within(a, t.WorkDir) {
				errs = append(errs, fmt.Errorf("task.toml artifacts entry %s is not supported with a separate verifier: only paths inside the workdir %s are transferred", a, t.WorkDir))
			}
		}
	}
	if len(t.Artifacts) > 0 && !t.Separate {
		t.Warnings = append(t.Warnings, "artifacts not collected: the verifier shares the agent's workspace, and records keep no artifact copies")
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// loadSingle reads a single-step task's instruction.md, tests/ and
// solution/.
func (t *Task) loadSingle(dir string) []error {
	var errs []error
	instr, err := readInstruction(dir, filepath.Join(dir, "instruction.md"), "instruction.md")
	if err != nil {
		errs = append(errs, err)
	}
	t.Instruction = instr
	tests := filepath.Join(dir, "tests")
	if fi, err := os.Stat(filepath.Join(tests, "test.sh")); err != nil || !fi.Mode().IsRegular() {
		if !t.Separate || !exists(filepath.Join(tests, "Dockerfile")) {
			errs = append(errs, errors.New("no tests/test.sh"))
		}
	} else {
		t.testsDir = tests
	}
	if t.Separate && t.testsDir == "" {
		errs = append(errs, errors.New("no tests/test.sh: a separate verifier environment's image must provide /tests/test.sh, and harnessd builds no image"))
	}
	if fi, err := os.Stat(filepath.Join(dir, "solution", "solve.sh")); err == nil && fi.Mode().IsRegular() {
		t.solutionDir = filepath.Join(dir, "solution")
	}
	return errs
}

// readInstruction reads an instruction.md p of the task directory dir
// (readTaskFile; name is how errors call it).
func readInstruction(dir, p, name string) (string, error) {
	instr, err := readTaskFile(dir, p, maxInstructionBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("no %s", name)
	case err != nil:
		return "", fmt.Errorf("%s: %w", name, err)
	case !utf8.Valid(instr):
		return "", fmt.Errorf("%s is not UTF-8", name)
	case strings.TrimSpace(string(instr)) == "":
		return "", fmt.Errorf("%s is empty", name)
	}
	return strings.TrimSpace(string(instr)), nil
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

func seconds(key string, v *float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 0 || *v > 1e7 {
		return 0, fmt.Errorf("%s %v is out of range (0 to 10,000,000 seconds)", key, *v)
	}
	return time.Duration(*v * float64(time.Second)), nil
}

// parseMemory reads Harbor's older memory = "2G" form, in MiB.
func parseMemory(s string) (int64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "GB"):
		mult, s = 1024, strings.TrimRight(s, "GB")
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "MB"):
		s = strings.TrimRight(s, "MB")
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 {
		return 0, errors.New("want a size such as 2G or 512M")
	}
	return n * mult, nil
}

func sortedEnv(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// within reports whether the inside path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// metadataShape refuses [metadata] a trainer's JSON decoder could not take
// (jsonshape): it goes to the trainer in every observation of the task.
func metadataShape(m map[string]any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return nil // not JSON at all: the observation's encoder says so
	}
	if err := jsonshape.Check(b); err != nil {
		return fmt.Errorf("task.toml [metadata]: %w: a trainer's JSON decoder fails on it", err)
	}
	return nil
}
