package tasks_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/harnessd/harnessd/tasks"
)

// datasetRow is a row of a Hugging Face-like dataset of inline-test tasks.
type datasetRow struct {
	TaskID     string  `parquet:"task_id"`
	Prompt     string  `parquet:"prompt"`
	Test       string  `parquet:"test"`
	Difficulty string  `parquet:"difficulty"`
	Points     int64   `parquet:"points"`
	Weight     float64 `parquet:"weight"`
	Source     *string `parquet:"source,optional"`
}

func writeParquet[T any](t testing.TB, file string, rows []T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(file, rows); err != nil {
		t.Fatalf("write %s: %v", file, err)
	}
}

var datasetColumns = tasks.Columns{ID: "task_id", Instruction: "prompt", Metadata: []string{"difficulty", "points", "weight", "source"}}

// writeDataset writes a two-shard dataset snapshot (data/train-*.parquet)
// and a cache directory whose shard must not be read.
func writeDataset(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	src := "synthetic"
	writeParquet(t, filepath.Join(dir, "data", "train-00000-of-00002.parquet"), []datasetRow{
		{TaskID: "write-ok", Prompt: "Write ok to out.txt.", Test: `test "$(cat /app/out.txt)" = ok`, Difficulty: "easy", Points: 1, Weight: 0.5, Source: &src},
		{TaskID: "write-two", Prompt: "Write 2 to two.txt.", Test: "grep -qx 2 /app/two.txt", Difficulty: "medium", Points: 2, Weight: 1},
	})
	writeParquet(t, filepath.Join(dir, "data", "train-00001-of-00002.parquet"), []datasetRow{
		{TaskID: "reward-file", Prompt: "Do nothing.", Test: "echo 0.25 > /logs/verifier/reward.txt", Difficulty: "hard", Points: 3, Weight: 2},
	})
	writeParquet(t, filepath.Join(dir, ".cache", "huggingface", "stale.parquet"), []datasetRow{{TaskID: "stale", Prompt: "x", Test: "true"}})
	return dir
}

func TestParquetTasksetServesByIDIndexAndSeed(t *testing.T) {
	dir := writeDataset(t)
	s, err := tasks.Load(tasks.Source{Parquet: dir, Columns: datasetColumns})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	var ids []string
	for _, task := range s.Tasks() {
		ids = append(ids, task.ID)
	}
	if want := []string{"write-ok", "write-two", "reward-file"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v (shards in path order, rows in order, .cache skipped)", ids, want)
	}
	idx := func(i int) *int { return &i }
	seed := func(i int64) *int64 { return &i }
	for _, c := range []struct {
		c    tasks.Choice
		want string
	}{
		{tasks.Choice{ID: "write-two"}, "write-two"},
		{tasks.Choice{Index: idx(2)}, "reward-file"},
		{tasks.Choice{Seed: seed(4)}, "write-two"}, // 4 mod 3 = 1
		{tasks.Choice{Seed: seed(-1)}, "reward-file"},
	} {
		task, err := s.Pick(c.c)
		if err != nil || task.ID != c.want {
			t.Errorf("pick %+v: %v %v, want %s", c.c, task, err, c.want)
		}
	}
	if _, err := s.Pick(tasks.Choice{ID: "stale"}); !errors.Is(err, tasks.ErrNoSuchTask) {
		t.Errorf("the .cache shard's task was loaded: %v", err)
	}
	ok := pick(t, s, "write-ok")
	if ok.Instruction != "Write ok to out.txt." || ok.WorkDir != "/app" {
		t.Errorf("write-ok: %+v", ok)
	}
	if m := ok.Metadata; m["difficulty"] != "easy" || m["points"] != int64(1) || m["weight"] != 0.5 || m["source"] != "synthetic" {
		t.Errorf("write-ok metadata %#v", m)
	}
	if _, has := pick(t, s, "write-two").Metadata["source"]; has {
		t.Errorf("a null metadata value was kept: %v", pick(t, s, "write-two").Metadata)
	}
	shard := filepath.Join(dir, "data", "train-00000-of-00002.parquet")
	if !strings.HasPrefix(ok.Source, shard+" row 0") || !slices.Contains(s.HiddenPaths(), dir) || !slices.Contains(ok.HiddenPaths(), shard) {
		t.Errorf("source %q, hidden %v / %v", ok.Source, s.HiddenPaths(), ok.HiddenPaths())
	}
	// One file is a taskset too.
	one, err := tasks.Load(tasks.Source{Parquet: shard, Columns: datasetColumns})
	if err != nil || one.Len() != 2 {
		t.Fatalf("load one shard: %v", err)
	}
}

// idRow is a dataset in the default column names with an integer id.
type idRow struct {
	ID          int64  `parquet:"id"`
	Instruction string `parquet:"instruction"`
	Test        string `parquet:"test"`
}

func TestParquetDefaultColumnsAndIntegerIDs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tasks.parquet")
	writeParquet(t, file, []idRow{{ID: 7, Instruction: "a", Test: "true"}, {ID: 9, Instruction: "b", Test: "false"}})
	s, err := tasks.Load(tasks.Source{Parquet: file})
	if err != nil {
		t.Fatal(err)
	}
	if task := pick(t, s, "9"); task.Instruction != "b" {
		t.Errorf("task 9: %+v", task)
	}
}

func TestParquetInlineTestGrades(t *testing.T) {
	needSandbox(t)
	s, err := tasks.Load(tasks.Source{Parquet: writeDataset(t), Columns: datasetColumns})
	if err != nil {
		t.Fatal(err)
	}
	task := pick(t, s, "write-ok")
	if r := grade(t, task, nil); r.Reward == nil || *r.Reward != 0 || r.ExitCode == 0 {
		t.Errorf("unsolved: %+v, want reward 0", r)
	}
	if r := grade(t, task, func(ws string) { os.WriteFile(filepath.Join(ws, "out.txt"), []byte("ok"), 0o644) }); r.Reward == nil || *r.Reward != 1 {
		t.Errorf("solved: %+v, want reward 1", r)
	}
	if r := grade(t, pick(t, s, "reward-file"), nil); r.Reward == nil || *r.Reward != 0.25 {
		t.Errorf("reward file: %+v, want 0.25", r)
	}
}

// pathRow names a Harbor task directory.
type pathRow struct {
	Dir   string `parquet:"dir"`
	Level string `parquet:"level"`
}

func TestParquetPathColumnLoadsHarborTasks(t *testing.T) {
	dir := t.TempDir()
	hello, _ := filepath.Abs("testdata/harbor/hello")
	rel, err := filepath.Rel(dir, hello)
	if err != nil {
		t.Fatal(err)
	}
	count, _ := filepath.Abs("testdata/harbor/count")
	writeParquet(t, filepath.Join(dir, "train", "0000.parquet"), []pathRow{{Dir: rel, Level: "one"}, {Dir: count, Level: "two"}})
	s, err := tasks.Load(tasks.Source{Parquet: dir, Columns: tasks.Columns{Path: "dir", Metadata: []string{"level"}}})
	if err != nil {
		t.Fatal(err)
	}
	h := pick(t, s, "hello")
	if !h.HasTests() || !h.HasSolution() || !strings.HasPrefix(h.Instruction, "Create the file greeting.txt") || h.Metadata["level"] != "one" || h.Metadata["difficulty"] != "easy" {
		t.Errorf("hello from the path column: %+v", h)
	}
	if !slices.Contains(s.HiddenPaths(), hello) {
		t.Errorf("hidden %v lacks %s", s.HiddenPaths(), hello)
	}
	if pick(t, s, "count").WorkDir != "/work" {
		t.Error("count's Dockerfile was not read")
	}
}

// oneColumn is a file with only an id.
type oneColumn struct {
	ID string `parquet:"id"`
}

func TestParquetBadInputErrorsClearly(t *testing.T) {
	dir := writeDataset(t)
	shard := filepath.Join(dir, "data", "train-00000-of-00002.parquet")
	other := t.TempDir()
	empty := filepath.Join(other, "empty", "none.parquet")
	writeParquet(t, empty, []datasetRow{})
	corrupt := filepath.Join(other, "corrupt", "bad.parquet")
	os.MkdirAll(filepath.Dir(corrupt), 0o755)
	os.WriteFile(corrupt, []byte("PAR1 this is not a parquet file PAR1"), 0o644)
	whole, _ := os.ReadFile(shard)
	truncated := filepath.Join(other, "truncated", "cut.parquet")
	os.MkdirAll(filepath.Dir(truncated), 0o755)
	os.WriteFile(truncated, append([]byte(nil), whole[:len(whole)/2]...), 0o644)
	flipped := filepath.Join(other, "flipped", "flip.parquet")
	os.MkdirAll(filepath.Dir(flipped), 0o755)
	f := append([]byte(nil), whole...)
	for i := 120; i < 300; i++ { // the first data pages, past their headers
		f[i] ^= 0x5a
	}
	os.WriteFile(flipped, f, 0o644)
	onlyID := filepath.Join(other, "only-id.parquet")
	writeParquet(t, onlyID, []oneColumn{{ID: "x"}})
	os.MkdirAll(filepath.Join(other, "nothing"), 0o755)

	for _, c := range []struct {
		name string
		src  tasks.Source
		want []string
	}{
		{"missing column", tasks.Source{Parquet: shard, Columns: tasks.Columns{ID: "task_id", Instruction: "question"}}, []string{shard, `no column "question" (instruction)`, "task_id, prompt, test"}},
		{"default id missing", tasks.Source{Parquet: shard, Columns: tasks.Columns{Instruction: "prompt"}}, []string{shard, `no column "id" (id)`}},
		{"wrong type", tasks.Source{Parquet: shard, Columns: tasks.Columns{ID: "task_id", Instruction: "points"}}, []string{shard, `column "points" (instruction) holds INT64, want BYTE_ARRAY`}},
		{"wrong id type", tasks.Source{Parquet: shard, Columns: tasks.Columns{ID: "weight", Instruction: "prompt"}}, []string{shard, `column "weight" (id) holds DOUBLE`}},
		{"missing metadata", tasks.Source{Parquet: shard, Columns: tasks.Columns{ID: "task_id", Instruction: "prompt", Metadata: []string{"author"}}}, []string{shard, `no column "author" (metadata)`}},
		{"test and path", tasks.Source{Parquet: shard, Columns: tasks.Columns{Test: "test", Path: "prompt"}}, []string{shard, "columns.test and columns.path both given"}},
		{"no test nor path", tasks.Source{Parquet: onlyID}, []string{onlyID, `no test column "test" and no path column "path"`}},
		{"empty dataset", tasks.Source{Parquet: filepath.Dir(empty), Columns: datasetColumns}, []string{filepath.Dir(empty), "no rows"}},
		{"no files", tasks.Source{Parquet: filepath.Join(other, "nothing")}, []string{"no .parquet files under " + filepath.Join(other, "nothing")}},
		{"corrupt file", tasks.Source{Parquet: corrupt}, []string{corrupt}},
		{"truncated file", tasks.Source{Parquet: truncated, Columns: datasetColumns}, []string{truncated}},
		{"flipped bytes", tasks.Source{Parquet: flipped, Columns: datasetColumns}, []string{flipped, "read rows", "corrupted parquet page"}},
		{"columns without parquet", tasks.Source{JSONL: "testdata/tasks.jsonl", Columns: datasetColumns}, []string{"columns: given without parquet"}},
	} {
		_, err := tasks.Load(c.src)
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}

	// Rows that do not make tasks are each reported by id and row.
	rows := filepath.Join(other, "rows.parquet")
	writeParquet(t, rows, []datasetRow{
		{TaskID: "dup", Prompt: "a", Test: "true"},
		{TaskID: "dup", Prompt: "b", Test: "true"},
		{TaskID: "no-test", Prompt: "c"},
		{TaskID: "", Prompt: "d", Test: "true"},
		{TaskID: "no-prompt", Prompt: "  ", Test: "true"},
	})
	_, err := tasks.Load(tasks.Source{Parquet: rows, Columns: datasetColumns})
	var le *tasks.LoadError
	if !errors.As(err, &le) || len(le.Problems) != 4 {
		t.Fatalf("bad rows: %v, want a *LoadError of 4", err)
	}
	for _, w := range []string{"task dup: id already used by " + rows + " row 0", `task no-test: column "test" (test) is empty`, "task " + rows + ` row 3: no id`, `task no-prompt: column "prompt" (instruction) is empty`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// Every single-byte corruption of a shard loads or fails with an error
// naming the file; none panics out of Load.
func TestParquetCorruptionNeverPanics(t *testing.T) {
	shard := filepath.Join(writeDataset(t), "data", "train-00000-of-00002.parquet")
	whole, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "corrupt.parquet")
	failed, recovered := 0, 0
	for i := range whole {
		f := append([]byte(nil), whole...)
		f[i] ^= 0xff
		if err := os.WriteFile(file, f, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := tasks.Load(tasks.Source{Parquet: file, Columns: datasetColumns})
		var le *tasks.LoadError
		switch {
		case err == nil:
		case errors.As(err, &le):
			failed++
		case !strings.Contains(err.Error(), file):
			t.Fatalf("byte %d flipped: error %q does not name the file", i, err)
		default:
			failed++
			if strings.Contains(err.Error(), "corrupt Parquet data") {
				if recovered++; recovered == 1 {
					t.Logf("byte %d flipped: %v", i, err)
				}
			}
		}
	}
	t.Logf("%d bytes: %d corruptions failed to load (%d of them by a recovered reader panic)", len(whole), failed, recovered)
	if failed == 0 {
		t.Error("no corruption was detected")
	}
}
