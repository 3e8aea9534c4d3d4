package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
)

// Source says where a taskset is read from (the config's tasks: key).
type Source struct {
	// Dir is a directory of Harbor task directories (each with task.toml).
	Dir string `yaml:"dir" json:"dir,omitempty"`
	// JSONL is a file of one task per line.
	JSONL string `yaml:"jsonl" json:"jsonl,omitempty"`
	// Task is one Harbor task directory (harnessd run --task).
	Task string `yaml:"task" json:"task,omitempty"`
	// Parquet is a dataset's Parquet file, or a directory whose *.parquet
	// files (its shards, at any depth: data/, split directories) are read
	// in path order — a row per task (parquet.go).
	Parquet string `yaml:"parquet" json:"parquet,omitempty"`
	// Columns maps Parquet's columns to task fields (only with Parquet).
	Columns Columns `yaml:"columns" json:"columns,omitzero"`
}

// Empty reports whether no taskset is configured.
func (s Source) Empty() bool {
	return s.Dir == "" && s.JSONL == "" && s.Task == "" && s.Parquet == "" && s.Columns.isZero()
}

// Equal reports whether s and o name the same taskset.
func (s Source) Equal(o Source) bool {
	c, d := s.Columns, o.Columns
	return s.Dir == o.Dir && s.JSONL == o.JSONL && s.Task == o.Task && s.Parquet == o.Parquet &&
		c.ID == d.ID && c.Instruction == d.Instruction && c.Test == d.Test && c.Path == d.Path &&
		slices.Equal(c.Metadata, d.Metadata)
}

// Clone is a copy of s that shares no memory with it.
func (s Source) Clone() Source {
	s.Columns.Metadata = slices.Clone(s.Columns.Metadata)
	return s
}

// Problem is one task that did not load.
type Problem struct {
	// ID is the task's id ("" when it could not be read).
	ID string
	// Source is its directory or FILE:LINE.
	Source string
	// Reason says what is wrong.
	Reason string
}

func (p Problem) String() string {
	id := p.ID
	if id == "" {
		id = p.Source
	}
	return fmt.Sprintf("task %s: %s", id, p.Reason)
}

// LoadError is a taskset with broken tasks; it lists every one.
type LoadError struct {
	Problems []Problem
}

func (e *LoadError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d broken tasks: ", len(e.Problems))
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Set is a loaded taskset. It is safe for concurrent use.
type Set struct {
	tasks  []*Task
	byID   map[string]int
	hidden []string
	next   atomic.Uint64 // round-robin position for resets without a choice
}

// Load reads and validates every task of src: the directories of src.Dir
// in name order (each subdirectory holding a task.toml is a task), then
// src.Task, then the lines of src.JSONL in file order, then the rows of
// src.Parquet (its files in path order). Ids must be unique. Any broken
// task makes Load fail with a *LoadError naming each by id and reason.
func Load(src Source) (*Set, error) {
	s := &Set{byID: map[string]int{}}
	if src.Parquet == "" && !src.Columns.isZero() {
		return nil, errors.New("columns: given without parquet")
	}
	for _, p := range []*string{&src.Dir, &src.JSONL, &src.Task, &src.Parquet} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			if err != nil {
				return nil, err
			}
			*p = abs
		}
	}
	var problems []Problem
	var unread sourceErrors // sources that could not be read at all: each is said
	add := func(t *Task) {
		if i, dup := s.byID[t.ID]; dup {
			problems = append(problems, Problem{ID: t.ID, Source: t.Source, Reason: "id already used by " + s.tasks[i].Source})
			return
		}
		s.byID[t.ID] = len(s.tasks)
		s.tasks = append(s.tasks, t)
	}
	if src.Dir != "" {
		ents, err := os.ReadDir(src.Dir)
		if err != nil {
			unread = append(unread, fmt.Errorf("dir: %w", err))
		}
		s.hidden = append(s.hidden, src.Dir)
		for _, e := range ents {
			dir := filepath.Join(src.Dir, e.Name())
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || !exists(filepath.Join(dir, "task.toml")) {
				continue
			}
			t, err := loadHarbor(dir)
			if err != nil {
				problems = append(problems, Problem{ID: e.Name(), Source: dir, Reason: oneLine(err)})
				continue
			}
			add(t)
		}
	}
	if src.Task != "" {
		t, err := loadHarbor(src.Task)
		if err != nil {
			problems = append(problems, Problem{ID: filepath.Base(src.Task), Source: src.Task, Reason: oneLine(err)})
		} else {
			s.hidden = append(s.hidden, src.Task)
			add(t)
		}
	}
	if src.JSONL != "" {
		ts, lps, err := loadJSONL(src.JSONL)
		if err != nil {
			unread = append(unread, fmt.Errorf("jsonl: %w", err))
		}
		s.hidden = append(s.hidden, src.JSONL)
		for _, lp := range lps {
			problems = append(problems, Problem{ID: lp.id, Source: lp.source, Reason: oneLine(lp.err)})
		}
		for _, t := range ts {
			add(t)
			s.hidden = append(s.hidden, t.hidden...)
		}
	}
	if src.Parquet != "" {
		ts, rps, err := loadParquet(src.Parquet, src.Columns)
		if err != nil {
			unread = append(unread, fmt.Errorf("parquet: %w", err))
		}
		s.hidden = append(s.hidden, src.Parquet)
		for _, rp := range rps {
			problems = append(problems, Problem{ID: rp.id, Source: rp.source, Reason: oneLine(rp.err)})
		}
		for _, t := range ts {
			add(t)
			s.hidden = append(s.hidden, t.hidden...)
		}
	}
	if len(unread) > 0 {
		return nil, unread
	}
	if len(problems) > 0 {
		return nil, &LoadError{Problems: problems}
	}
	if len(s.tasks) == 0 {
		return nil, errors.New("no tasks found (a task is a directory with task.toml, a line of the JSONL file or a row of the Parquet dataset)")
	}
	return s, nil
}

// sourceErrors are the sources of a taskset that could not be read, said
// on one line ("dir: ...; parquet: ..."): every one at once, not the first.
type sourceErrors []error

func (e sourceErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e sourceErrors) Unwrap() []error { return e }

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// Len is the number of tasks.
func (s *Set) Len() int { return len(s.tasks) }

// Tasks returns the tasks in order (Load's order: the index task_index
// counts in).
func (s *Set) Tasks() []*Task { return s.tasks }

// HiddenPaths are the host paths of the taskset (its directory, the JSONL
// file and the directories it names) that a harness must never see.
func (s *Set) HiddenPaths() []string {
	out := append([]string(nil), s.hidden...)
	sort.Strings(out)
	return out
}

// Choice is how a reset picks a task. At most one of ID and Index may be
// set; Seed is used when neither is.
type Choice struct {
	ID    string
	Index *int
	Seed  *int64
}

// ErrNoSuchTask is wrapped by Pick's errors for an id or index that names
// no task.
var ErrNoSuchTask = errors.New("no such task")

// Pick chooses a task:
//
//   - ID: the task with that id;
//   - Index: the task at that 0-based position in Load's order;
//   - Seed: the task at position seed mod Len() — the same seed always
//     picks the same task of the same taskset;
//   - none: the next task in order, round-robin over every reset of the
//     Set (all sessions of a daemon share it).
func (s *Set) Pick(c Choice) (*Task, error) {
	switch {
	case c.ID != "" && c.Index != nil:
		return nil, errors.New("give task_id or task_index, not both")
	case c.ID != "":
		i, ok := s.byID[c.ID]
		if !ok {
			return nil, fmt.Errorf("%w: task_id %q (the taskset has %d tasks; GET /tasks lists them)", ErrNoSuchTask, c.ID, len(s.tasks))
		}
		return s.tasks[i], nil
	case c.Index != nil:
		if *c.Index < 0 || *c.Index >= len(s.tasks) {
			return nil, fmt.Errorf("%w: task_index %d is out of range 0..%d", ErrNoSuchTask, *c.Index, len(s.tasks)-1)
		}
		return s.tasks[*c.Index], nil
	case c.Seed != nil:
		return s.tasks[SeedIndex(*c.Seed, len(s.tasks))], nil
	}
	return s.tasks[(s.next.Add(1)-1)%uint64(len(s.tasks))], nil
}

// SeedIndex is the position a seed picks among n tasks: seed mod n (a
// negative seed counts from the end).
func SeedIndex(seed int64, n int) int {
	i := seed % int64(n)
	if i < 0 {
		i += int64(n)
	}
	return int(i)
}
