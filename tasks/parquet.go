package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// Columns maps a Parquet taskset's columns to task fields (the config's
// tasks: columns:). A field left empty takes its default column name; a
// default column that the file lacks is an error only where the field is
// required.
type Columns struct {
	// ID is the task id column (default "id"): a string or an integer.
	// Required unless Path is used, where it defaults to the directory's
	// name.
	ID string `yaml:"id" json:"id,omitempty"`
	// Instruction is the prompt column (default "instruction"), a string.
	// Required unless Path is used, where instruction.md is the default.
	Instruction string `yaml:"instruction" json:"instruction,omitempty"`
	// Test is the inline test column (default "test"): a script run with
	// bash -c in the grading sandbox, graded like a JSONL grader (its
	// reward file, else its exit status).
	Test string `yaml:"test" json:"test,omitempty"`
	// Path is the column naming each row's Harbor task directory (default
	// "path"), relative to the dataset's directory. A taskset uses Test or
	// Path: without either given, the file's "test" column, else its
	// "path" column.
	Path string `yaml:"path" json:"path,omitempty"`
	// Metadata are scalar columns (strings, integers, floats, booleans)
	// copied into the task's Metadata under their own names.
	Metadata []string `yaml:"metadata" json:"metadata,omitempty"`
}

func (c Columns) isZero() bool {
	return c.ID == "" && c.Instruction == "" && c.Test == "" && c.Path == "" && len(c.Metadata) == 0
}

// parquetBatch is how many rows are read at a time.
const parquetBatch = 64

// parquetFiles lists the .parquet files of root: root itself when it is a
// file, else every *.parquet below it (symbolic links to files included,
// as in a Hugging Face cache snapshot; hidden directories skipped) in path
// order.
func parquetFiles(root string) ([]string, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{root}, nil
	}
	var out []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".parquet") {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no .parquet files under %s", root)
	}
	return out, nil
}

// loadParquet reads the Parquet taskset root (a file or a dataset's
// directory of shards). A file that cannot be read as the mapping says
// (missing or mistyped column, corrupt data) is an error; a row that does
// not make a task is a problem.
func loadParquet(root string, cols Columns) ([]*Task, []lineProblem, error) {
	files, err := parquetFiles(root)
	if err != nil {
		return nil, nil, err
	}
	base := root
	if len(files) == 1 && files[0] == root {
		base = filepath.Dir(root)
	}
	var out []*Task
	var problems []lineProblem
	rows := int64(0)
	for _, f := range files {
		ts, ps, n, err := readParquetFile(f, base, cols)
		if err != nil {
			return nil, nil, err
		}
		rows += n
		out, problems = append(out, ts...), append(problems, ps...)
	}
	if rows == 0 {
		return nil, nil, fmt.Errorf("%s: the dataset has no rows (%d files)", root, len(files))
	}
	return out, problems, nil
}

// column is one mapped column of a file.
type column struct {
	name  string
	index int
	kind  parquet.Kind
}

// parquetMapping is a file's columns resolved against a Columns.
type parquetMapping struct {
	id, instruction, test, path *column
	metadata                    []*column
}

// resolveColumns checks the file's schema against cols.
func resolveColumns(file string, s *parquet.Schema, cols Columns) (*parquetMapping, error) {
	has := func(name string) bool {
		for _, f := range s.Fields() {
			if f.Name() == name {
				return true
			}
		}
		return false
	}
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name())
	}
	lookup := func(field, name string, kinds ...parquet.Kind) (*column, error) {
		leaf, ok := s.Lookup(name)
		switch {
		case !ok && has(name):
			return nil, fmt.Errorf("%s: column %q (%s) is a group (a struct or list), not a scalar", file, name, field)
		case !ok:
			return nil, fmt.Errorf("%s: no column %q (%s); the file's columns: %s", file, name, field, strings.Join(names, ", "))
		case leaf.MaxRepetitionLevel > 0:
			return nil, fmt.Errorf("%s: column %q (%s) is a list, not a scalar", file, name, field)
		}
		k := leaf.Node.Type().Kind()
		for _, want := range kinds {
			if k == want {
				return &column{name: name, index: leaf.ColumnIndex, kind: k}, nil
			}
		}
		var ws []string
		for _, want := range kinds {
			ws = append(ws, want.String())
		}
		return nil, fmt.Errorf("%s: column %q (%s) holds %s, want %s", file, name, field, k, strings.Join(ws, " or "))
	}
	// optional resolves a column that may be absent unless given.
	optional := func(field, given, def string, kinds ...parquet.Kind) (*column, error) {
		if given == "" && !has(def) {
			return nil, nil
		}
		return lookup(field, or(given, def), kinds...)
	}
	m := &parquetMapping{}
	var err error
	switch {
	case cols.Test != "" && cols.Path != "":
		return nil, fmt.Errorf("%s: columns.test and columns.path both given: a task has an inline test or a Harbor directory", file)
	case cols.Path != "" || (cols.Test == "" && !has("test") && has("path")):
		if m.path, err = lookup("path", or(cols.Path, "path"), parquet.ByteArray); err != nil {
			return nil, err
		}
		if m.id, err = optional("id", cols.ID, "id", parquet.ByteArray, parquet.Int32, parquet.Int64); err != nil {
			return nil, err
		}
		if m.instruction, err = optional("instruction", cols.Instruction, "instruction", parquet.ByteArray); err != nil {
			return nil, err
		}
	default:
		if cols.Test == "" && !has("test") {
			return nil, fmt.Errorf("%s: no test column %q and no path column %q: map one with columns.test or columns.path; the file's columns: %s", file, "test", "path", strings.Join(names, ", "))
		}
		if m.test, err = lookup("test", or(cols.Test, "test"), parquet.ByteArray); err != nil {
			return nil, err
		}
		if m.id, err = lookup("id", or(cols.ID, "id"), parquet.ByteArray, parquet.Int32, parquet.Int64); err != nil {
			return nil, err
		}
		if m.instruction, err = lookup("instruction", or(cols.Instruction, "instruction"), parquet.ByteArray); err != nil {
			return nil, err
		}
	}
	for _, name := range cols.Metadata {
		c, err := lookup("metadata", name, parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.ByteArray)
		if err != nil {
			return nil, err
		}
		m.metadata = append(m.metadata, c)
	}
	return m, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// readParquetFile reads the tasks of one file and counts its rows. The
// reader's own failures on corrupt data (it panics on some) become errors.
func readParquetFile(file, base string, cols Columns) (ts []*Task, problems []lineProblem, rows int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			ts, problems, rows, err = nil, nil, 0, fmt.Errorf("%s: corrupt Parquet data: %v", file, r)
		}
	}()
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, 0, err
	}
	pf, err := parquet.OpenFile(f, fi.Size())
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: not a readable Parquet file: %w", file, err)
	}
	m, err := resolveColumns(file, pf.Schema(), cols)
	if err != nil {
		return nil, nil, 0, err
	}
	ncols := len(pf.Schema().Columns())
	buf := make([]parquet.Row, parquetBatch)
	for _, rg := range pf.RowGroups() {
		rr := rg.Rows()
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				vals := make([]parquet.Value, ncols)
				seen := make([]bool, ncols)
				for _, v := range row {
					if c := v.Column(); c >= 0 && c < ncols && !seen[c] {
						vals[c], seen[c] = v, true
					}
				}
				src := fmt.Sprintf("%s row %d", file, rows)
				rows++
				t, id, err := m.task(vals, base, src)
				if err != nil {
					problems = append(problems, lineProblem{id: id, source: src, err: err})
					continue
				}
				t.hidden = append(t.hidden, file)
				ts = append(ts, t)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rr.Close()
				return nil, nil, 0, fmt.Errorf("%s: read rows: %w", file, err)
			}
		}
		rr.Close()
	}
	return ts, problems, rows, nil
}

// text reads a string column's value; null is ok == false.
func text(c *column, vals []parquet.Value) (s string, ok bool, err error) {
	v := vals[c.index]
	if v.IsNull() {
		return "", false, nil
	}
	switch c.kind {
	case parquet.Int32, parquet.Int64:
		return strconv.FormatInt(v.Int64(), 10), true, nil
	}
	b := v.ByteArray()
	if !utf8.Valid(b) {
		return "", true, fmt.Errorf("column %q is not UTF-8", c.name)
	}
	return string(b), true, nil
}

// scalar is a metadata column's value (nil for null).
func scalar(c *column, vals []parquet.Value) (any, error) {
	v := vals[c.index]
	if v.IsNull() {
		return nil, nil
	}
	switch c.kind {
	case parquet.Boolean:
		return v.Boolean(), nil
	case parquet.Int32, parquet.Int64:
		return v.Int64(), nil
	case parquet.Float:
		return float64(v.Float()), nil
	case parquet.Double:
		return v.Double(), nil
	}
	s, _, err := text(c, vals)
	return s, err
}

// task makes the task of one row; id is the row's id when it has one.
func (m *parquetMapping) task(vals []parquet.Value, base, src string) (t *Task, id string, err error) {
	var errs []error
	if m.id != nil {
		var ok bool
		if id, ok, err = text(m.id, vals); err != nil {
			errs = append(errs, err)
		} else if !ok {
			errs = append(errs, fmt.Errorf("column %q (id) is null", m.id.name))
		}
	}
	var instr string
	hasInstr := false
	if m.instruction != nil {
		if instr, hasInstr, err = text(m.instruction, vals); err != nil {
			errs = append(errs, err)
		}
		instr = strings.TrimSpace(instr)
		switch {
		case len(instr) > maxInstructionBytes:
			errs = append(errs, fmt.Errorf("column %q (instruction) is larger than %d bytes", m.instruction.name, maxInstructionBytes))
		case m.path == nil && instr == "":
			errs = append(errs, fmt.Errorf("column %q (instruction) is empty", m.instruction.name))
		}
	}
	meta := map[string]any{}
	for _, c := range m.metadata {
		v, err := scalar(c, vals)
		if err != nil {
			errs = append(errs, err)
		} else if v != nil {
			meta[c.name] = v
		}
	}
	if m.path != nil {
		p, ok, err := text(m.path, vals)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !ok || strings.TrimSpace(p) == "":
			errs = append(errs, fmt.Errorf("column %q (path) is empty", m.path.name))
		default:
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			if len(errs) > 0 {
				break
			}
			if t, err = loadHarbor(p); err != nil {
				errs = append(errs, fmt.Errorf("harbor task %s: %w", p, err))
				break
			}
			if id != "" {
				t.ID = id
			}
			if hasInstr && instr != "" {
				t.Instruction = instr
			}
			t.Source = src + " (" + p + ")"
		}
	} else {
		script, ok, err := text(m.test, vals)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !ok || strings.TrimSpace(script) == "":
			errs = append(errs, fmt.Errorf("column %q (test) is empty", m.test.name))
		}
		t = &Task{ID: id, Instruction: instr, Source: src, WorkDir: DefaultWorkDir,
			VerifierTimeout: DefaultVerifierTimeout, exitReward: true, grader: []string{"bash", "-c", script}}
	}
	if len(errs) == 0 {
		if err := checkID(t.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, id, err
	}
	if len(meta) > 0 {
		if t.Metadata == nil {
			t.Metadata = map[string]any{}
		}
		for k, v := range meta {
			t.Metadata[k] = v
		}
	}
	return t, t.ID, nil
}
