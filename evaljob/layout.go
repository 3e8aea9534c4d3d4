package evaljob

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/renameio/v2"

	"github.com/harnessd/harnessd/internal/recordfile"
)

// The job directory:
//
//	job.json                   the job's configuration (JobFile)
//	.lock                      flock-ed by the process running the job
//	results.jsonl              a line per finished trial (Result), in the order they finished
//	summary.json               the summary (Summary), written at the end
//	records/AGENT/             where the agent's episodes write their records (moved into the trials)
//	trials/TRIAL/result.json   the trial's Result; a trial without one has not finished
//	trials/TRIAL/grade.json    the tests' grade (wire.TaskGrade)
//	trials/TRIAL/record.jsonl  the episode's record (agent trials)
//	trials/TRIAL/record.export.json  the model gateway's training export, when there was training traffic
//	                           (beside the record, where harnessd export --format atif looks for it)
//	trials/TRIAL/trajectory.json  the ATIF trajectory made from the record and the export
//	trials/TRIAL/solve.json    the oracle's run of solution/solve.sh (oracle trials)
//
// TRIAL is AGENT__TASK__ATTEMPT, the task id escaped as record file names
// are (internal/recordfile).
const (
	jobFile     = "job.json"
	resultsFile = "results.jsonl"
	summaryFile = "summary.json"
	trialsDir   = "trials"
	recordsDir  = "records"
	resultName  = "result.json"
)

// JobFile is job.json: the job's Spec and how it was run.
type JobFile struct {
	Spec
	// Concurrency, Retry and Harnessd say how the job was (last) run; a
	// resume may change them.
	Concurrency int         `json:"concurrency"`
	Retry       RetryPolicy `json:"retry"`
	Harnessd    string      `json:"harnessd_version,omitempty"`
	Created     time.Time   `json:"created"`
}

// trialName is the directory name of agent's attempt at task:
// AGENT__TASK__N, each part a file name (recordfile.FileName) in which
// "__" can only be the separator (trialPart), so that no two trials share
// a directory, and the whole within a file name's 255 bytes.
func trialName(agent, task string, attempt int) string {
	return trialPart(agent) + "__" + trialPart(task) + "__" + strconv.Itoa(attempt)
}

// maxTrialPart bounds a trial name's agent and task parts.
const maxTrialPart = 112

// trialPart is s as a part of a trial name: recordfile.FileName(s), with
// every "_" escaped (%5F) when it holds "__" or starts or ends with "_"
// (names that could blur the separator; any other name is unchanged, so
// job directories of earlier versions resume), and a longer one cut,
// with a digest of s to keep it apart from others.
func trialPart(s string) string {
	p := recordfile.FileName(s)
	if strings.Contains(p, "__") || strings.HasPrefix(p, "_") || strings.HasSuffix(p, "_") {
		p = strings.ReplaceAll(p, "_", "%5F")
	}
	if len(p) <= maxTrialPart {
		return p
	}
	sum := sha256.Sum256([]byte(s))
	cut := maxTrialPart - 1 - 16
	if i := strings.LastIndexByte(p[:cut], '%'); i >= cut-2 {
		cut = i // not inside an escape
	}
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return p[:cut] + "~" + hex.EncodeToString(sum[:8])
}

// writeJSON writes v to path atomically (a temporary file renamed over it).
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := writeAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeAtomic writes data to path through a temporary file of its own in
// the same directory, renamed over path: a reader sees the old content or
// the new, and two writers of one path never share a temporary file.
func writeAtomic(path string, data []byte) error {
	return renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(filepath.Dir(path)))
}

// readJSON decodes path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// makeJobDir makes a new job directory: dir must not exist or be empty.
func makeJobDir(dir string) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("job directory %s exists and is not empty (resume it with --resume %s, or give another --job-dir)", dir, dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("job directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, trialsDir), 0o755); err != nil {
		return fmt.Errorf("job directory: %w", err)
	}
	return nil
}

// openJob reads the job.json of an existing job directory.
func openJob(dir string) (*JobFile, error) {
	var jf JobFile
	if err := readJSON(filepath.Join(dir, jobFile), &jf); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a job directory: no %s", dir, jobFile)
		}
		return nil, fmt.Errorf("job directory: %w", err)
	}
	return &jf, nil
}

// finishedResults reads the result.json of every finished trial of plan,
// by trial name.
func finishedResults(dir string, plan []trial) (map[string]*Result, error) {
	out := map[string]*Result{}
	for _, t := range plan {
		var r Result
		err := readJSON(filepath.Join(dir, trialsDir, t.name, resultName), &r)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("trial %s: %w", t.name, err)
		}
		out[t.name] = &r
	}
	return out, nil
}

// resultLog is results.jsonl, appended a whole line per write.
type resultLog struct {
	mu sync.Mutex
	f  *os.File
}

// openResultLog opens dir's results.jsonl for appending. On a resumed job
// it first rewrites it (atomically) to hold exactly the finished trials'
// results: the lines already there in their order (a line torn by a crash
// dropped), then those whose result.json was written but whose line was
// not.
func openResultLog(dir string, done map[string]*Result, order []trial) (*resultLog, error) {
	path := filepath.Join(dir, resultsFile)
	var keep bytes.Buffer
	seen := map[string]bool{}
	if b, err := os.ReadFile(path); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var r Result
			if json.Unmarshal(sc.Bytes(), &r) != nil || done[r.Trial] == nil || seen[r.Trial] {
				continue
			}
			seen[r.Trial] = true
			keep.Write(sc.Bytes())
			keep.WriteByte('\n')
		}
	}
	for _, t := range order {
		if r := done[t.name]; r != nil && !seen[t.name] {
			b, err := json.Marshal(r)
			if err != nil {
				return nil, fmt.Errorf("encode result: %w", err)
			}
			keep.Write(append(b, '\n'))
		}
	}
	if err := writeAtomic(path, keep.Bytes()); err != nil {
		return nil, fmt.Errorf("write %s: %w", resultsFile, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", resultsFile, err)
	}
	return &resultLog{f: f}, nil
}

// append writes r as one line, in one write (O_APPEND: whole lines, never
// interleaved), and syncs it.
func (l *resultLog) append(r *Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("append to %s: %w", resultsFile, err)
	}
	return l.f.Sync()
}

func (l *resultLog) close() error { return l.f.Close() }

// ReadJob reads the job.json of the job directory dir.
func ReadJob(dir string) (*JobFile, error) { return openJob(dir) }

// lockFile is held (flock) by the process running the job, so that two
// cannot run one job directory at once; a killed process's lock goes with
// it.
const lockFile = ".lock"

// lockJob takes dir's lock, failing when another process holds it.
func lockJob(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("job directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("job directory %s is in use by another harnessd eval", dir)
		}
		return nil, fmt.Errorf("job directory lock: %w", err)
	}
	return f, nil
}
