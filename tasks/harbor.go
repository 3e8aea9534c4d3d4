package tasks

import (
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
)

// maxInstructionBytes bounds instruction.md.
const maxInstructionBytes = 1 << 20

// taskTOML is the part of Harbor's task.toml that harnessd reads; every
// other key is reported as ignored.
type taskTOML struct {
	Version  string         `toml:"version"`
	Task     taskSection    `toml:"task"`
	Metadata map[string]any `toml:"metadata"`
	Verifier struct {
		TimeoutSec *float64          `toml:"timeout_sec"`
		Env        map[string]string `toml:"env"`
	} `toml:"verifier"`
	Agent struct {
		TimeoutSec *float64 `toml:"timeout_sec"`
	} `toml:"agent"`
	Solution struct {
		Env map[string]string `toml:"env"`
	} `toml:"solution"`
	Environment struct {
		BuildTimeoutSec *float64    `toml:"build_timeout_sec"`
		DockerImage     string      `toml:"docker_image"`
		CPUs            *float64    `toml:"cpus"`
		MemoryMB        *int64      `toml:"memory_mb"`
		Memory          string      `toml:"memory"`
		StorageMB       *int64      `toml:"storage_mb"`
		Storage         string      `toml:"storage"`
		GPUs            *int64      `toml:"gpus"`
		GPUTypes        []string    `toml:"gpu_types"`
		AllowInternet   *bool       `toml:"allow_internet"`
		MCPServers      []MCPServer `toml:"mcp_servers"`
	} `toml:"environment"`
}

type taskSection struct {
	Name        string `toml:"name"`
	Description string `toml:"description"`
}

// loadHarbor reads the Harbor task directory dir.
func loadHarbor(dir string) (*Task, error) {
	t := &Task{ID: filepath.Base(dir), Source: dir, VerifierTimeout: DefaultVerifierTimeout, hidden: []string{dir}}
	var cfg taskTOML
	md, err := toml.DecodeFile(filepath.Join(dir, "task.toml"), &cfg)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no task.toml")
		}
		return nil, fmt.Errorf("task.toml: %w", err)
	}
	for _, k := range md.Undecoded() {
		t.Warnings = append(t.Warnings, fmt.Sprintf("task.toml %s ignored: harnessd does not know it", k))
	}
	var errs []error
	t.Name, t.Description, t.Metadata = cfg.Task.Name, cfg.Task.Description, cfg.Metadata
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
	t.VerifierEnv = sortedEnv(cfg.Verifier.Env)
	t.SolutionEnv = sortedEnv(cfg.Solution.Env)
	env := cfg.Environment
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
	t.AllowInternet = env.AllowInternet
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

	instr, err := os.ReadFile(filepath.Join(dir, "instruction.md"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		errs = append(errs, errors.New("no instruction.md"))
	case err != nil:
		errs = append(errs, fmt.Errorf("instruction.md: %w", err))
	case len(instr) > maxInstructionBytes:
		errs = append(errs, fmt.Errorf("instruction.md is larger than %d bytes", maxInstructionBytes))
	case !utf8.Valid(instr):
		errs = append(errs, errors.New("instruction.md is not UTF-8"))
	case strings.TrimSpace(string(instr)) == "":
		errs = append(errs, errors.New("instruction.md is empty"))
	default:
		t.Instruction = strings.TrimSpace(string(instr))
	}

	t.WorkDir = DefaultWorkDir
	envDir := filepath.Join(dir, "environment")
	if df := filepath.Join(envDir, "Dockerfile"); exists(df) {
		d, err := parseDockerfile(df, envDir)
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
	for _, c := range t.copies {
		if !within(c.dst, t.WorkDir) && !(c.intoDir && within(path.Join(c.dst, filepath.Base(c.src)), t.WorkDir)) {
			t.Warnings = append(t.Warnings, fmt.Sprintf("COPY to %s not honoured: it lies outside WORKDIR %s (only the workspace is the task's)", c.dst, t.WorkDir))
		}
	}

	tests := filepath.Join(dir, "tests")
	if fi, err := os.Stat(filepath.Join(tests, "test.sh")); err != nil || !fi.Mode().IsRegular() {
		errs = append(errs, errors.New("no tests/test.sh"))
	} else {
		t.testsDir = tests
	}
	if fi, err := os.Stat(filepath.Join(dir, "solution", "solve.sh")); err == nil && fi.Mode().IsRegular() {
		t.solutionDir = filepath.Join(dir, "solution")
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
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
