package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/internal/jsonshape"
)

// maxJSONLLine bounds one line of a JSONL taskset.
const maxJSONLLine = 16 << 20

// jsonlTask is one line of a JSONL taskset.
type jsonlTask struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Instruction string            `json:"instruction"`
	Files       map[string]string `json:"files"`
	Dir         string            `json:"dir"`
	WorkDir     string            `json:"workdir"`
	Env         map[string]string `json:"env"`
	// Grader is an argv list, or a string run with sh -c.
	Grader          json.RawMessage `json:"grader"`
	Tests           string          `json:"tests"`
	Solution        string          `json:"solution"`
	Metadata        map[string]any  `json:"metadata"`
	AgentTimeout    *float64        `json:"agent_timeout_sec"`
	VerifierTimeout *float64        `json:"verifier_timeout_sec"`
	CPUs            *float64        `json:"cpus"`
	MemoryMB        *int64          `json:"memory_mb"`
	AllowInternet   *bool           `json:"allow_internet"`
}

// lineProblem is a JSONL line that did not load.
type lineProblem struct {
	id     string
	source string
	err    error
}

// loadJSONL reads a JSONL taskset; relative paths in it are resolved
// against the file's directory.
func loadJSONL(file string) ([]*Task, []lineProblem, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	base := filepath.Dir(file)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLLine)
	var out []*Task
	var problems []lineProblem
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		src := fmt.Sprintf("%s:%d", file, n)
		if err := jsonshape.Check(line); err != nil {
			// Its metadata goes to the trainer in each observation.
			problems = append(problems, lineProblem{source: src, err: fmt.Errorf("%w: a trainer's JSON decoder fails on it", err)})
			continue
		}
		var jt jsonlTask
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&jt); err != nil {
			problems = append(problems, lineProblem{id: jt.ID, source: src, err: describeJSONLError(err)})
			continue
		}
		t, err := jt.task(base, src)
		if err != nil {
			problems = append(problems, lineProblem{id: jt.ID, source: src, err: err})
			continue
		}
		t.hidden = append(t.hidden, file)
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return out, problems, fmt.Errorf("read %s: %w", file, err)
	}
	return out, problems, nil
}

func (jt *jsonlTask) task(base, src string) (*Task, error) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	t := &Task{ID: jt.ID, Name: jt.Name, Instruction: strings.TrimSpace(jt.Instruction), Metadata: jt.Metadata,
		Source: src, WorkDir: DefaultWorkDir, VerifierTimeout: DefaultVerifierTimeout, exitReward: true}
	var errs []error
	if err := checkID(jt.ID); err != nil {
		errs = append(errs, err)
	}
	if t.Instruction == "" {
		errs = append(errs, errors.New("no instruction"))
	} else if !utf8.ValidString(t.Instruction) {
		errs = append(errs, errors.New("instruction is not UTF-8"))
	}
	if jt.WorkDir != "" {
		if !path.IsAbs(jt.WorkDir) {
			errs = append(errs, fmt.Errorf("workdir %q is not absolute", jt.WorkDir))
		} else {
			t.WorkDir = path.Clean(jt.WorkDir)
		}
	}
	for p := range jt.Files {
		if err := checkRelPath(p); err != nil {
			errs = append(errs, fmt.Errorf("files: %w", err))
		}
	}
	t.files = jt.Files
	if jt.Dir != "" {
		d := abs(jt.Dir)
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("dir %q is not a directory", jt.Dir))
		} else {
			t.copies = []copyOp{{src: d, dst: t.WorkDir, isDir: true}}
		}
	}
	t.Env = sortedEnv(jt.Env)
	if jt.Tests != "" {
		d := abs(jt.Tests)
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("tests %q is not a directory", jt.Tests))
		} else {
			t.testsDir = d
			t.hidden = append(t.hidden, d)
		}
	}
	if jt.Solution != "" {
		d := abs(jt.Solution)
		if !exists(filepath.Join(d, "solve.sh")) {
			errs = append(errs, fmt.Errorf("solution %q has no solve.sh", jt.Solution))
		} else {
			t.solutionDir = d
			t.hidden = append(t.hidden, d)
		}
	}
	switch g := bytes.TrimSpace(jt.Grader); {
	case len(g) == 0 || bytes.Equal(g, []byte("null")):
		if t.testsDir == "" || !exists(filepath.Join(t.testsDir, "test.sh")) {
			errs = append(errs, errors.New("no grader: give a grader command or a tests directory with test.sh"))
		}
	case g[0] == '"':
		var s string
		json.Unmarshal(g, &s)
		if strings.TrimSpace(s) == "" {
			errs = append(errs, errors.New("grader is empty"))
		}
		t.grader = []string{"sh", "-c", s}
	default:
		if err := json.Unmarshal(g, &t.grader); err != nil || len(t.grader) == 0 || t.grader[0] == "" {
			errs = append(errs, errors.New("grader must be a command string or a non-empty list of strings"))
		}
	}
	var err error
	if t.AgentTimeout, err = seconds("agent_timeout_sec", jt.AgentTimeout); err != nil {
		errs = append(errs, err)
	}
	if d, err := seconds("verifier_timeout_sec", jt.VerifierTimeout); err != nil {
		errs = append(errs, err)
	} else if d > 0 {
		t.VerifierTimeout = d
	}
	if jt.CPUs != nil {
		if *jt.CPUs < 0 {
			errs = append(errs, errors.New("cpus is negative"))
		}
		t.Limits.CPUs = *jt.CPUs
	}
	if jt.MemoryMB != nil {
		if *jt.MemoryMB < 0 {
			errs = append(errs, errors.New("memory_mb is negative"))
		}
		t.Limits.MemoryMB = *jt.MemoryMB
	}
	t.AllowInternet = jt.AllowInternet
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// checkID accepts a task id: 1 to 255 bytes of UTF-8 without control
// characters or slashes.
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("no id")
	case len(id) > 255:
		return errors.New("id is longer than 255 bytes")
	case !utf8.ValidString(id):
		return errors.New("id is not UTF-8")
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || r == '/' {
			return fmt.Errorf("id %q holds a control character or a slash", id)
		}
	}
	return nil
}

// checkRelPath accepts a relative path that stays below its base.
func checkRelPath(p string) error {
	if p == "" || strings.IndexByte(p, 0) >= 0 || path.IsAbs(p) {
		return fmt.Errorf("path %q must be relative", p)
	}
	if c := path.Clean(p); c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("path %q leaves the working directory", p)
	}
	return nil
}
