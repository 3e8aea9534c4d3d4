package streamjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/beneath"
	"github.com/harnessd/harnessd/internal/environ"
	"github.com/harnessd/harnessd/wire"
)

// Claude Code keeps each session as
// $CLAUDE_CONFIG_DIR/projects/<project>/<session id>.jsonl, where
// <project> is the session's working directory made a file name
// (ProjectDirName). A forked sibling is started with --resume ID
// --fork-session against its copy of the parent's HOME: it reads the
// parent's conversation from the copy and writes its own under a new id.
const (
	// noPersistenceFlag turns Claude Code's session files off; an agent
	// started with it cannot be resumed.
	noPersistenceFlag = "--no-session-persistence"
	// maxProjectName is how long a project directory name may get before
	// Claude Code shortens it with a hash (2.1.197: 200).
	maxProjectName = 200
)

// forkData is the claude adapter's ForkState.Data.
type forkData struct {
	// SessionID is the parent's session (system/init's session_id).
	SessionID string `json:"session_id"`
	// Project is the directory under the config dir's projects/ that held
	// the parent's session file.
	Project string `json:"project,omitempty"`
	// Model is the parent's model as its system/init named it (the
	// alias's resolved id, "claude-opus-4-8[1m]"). The sibling is resumed
	// with --model set to it: Claude Code resumes a session with the
	// session's stripped model id otherwise ("claude-opus-4-8", 2.1.197),
	// whose system prompt differs from the parent's, so the sibling's
	// first call would not extend the parent's chain.
	Model string `json:"model,omitempty"`
}

// modelPattern is the shape of a model id passed on as --model (no
// option, no spaces or control characters).
var modelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]{0,199}$`)

// sessionIDPattern is the shape of Claude Code's session ids (UUIDs); an id
// of any other shape never reaches the command line.
var sessionIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// configDir is where Claude Code of launch l keeps its state:
// CLAUDE_CONFIG_DIR of its environment, else HOME/.claude.
func configDir(l *harness.Launch) string {
	if d, ok := environ.Lookup(l.Env, "CLAUDE_CONFIG_DIR"); ok && d != "" {
		return d
	}
	home := l.Home
	if h, ok := environ.Lookup(l.Env, "HOME"); ok && h != "" {
		home = h
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".claude")
}

// launchProject is the project directory name of l's working directory.
// Claude Code resolves symlinks in it first; that is done here only for a
// working directory that is a host path (no sandbox mount point).
func launchProject(l *harness.Launch) string {
	dir := l.Dir()
	if l.WorkDir == "" {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
	}
	return ProjectDirName(dir)
}

// ProjectDirName is the name Claude Code 2.1.197 gives the project
// directory of working directory dir: every character but an ASCII letter
// or digit becomes "-", and a name longer than 200 characters keeps its
// first 200 followed by "-" and the base-36 absolute value of a 32-bit
// string hash of dir (Java's, over UTF-16 code units).
func ProjectDirName(dir string) string {
	units := utf16.Encode([]rune(dir))
	name := make([]byte, 0, len(units))
	for _, u := range units {
		switch {
		case u >= 'a' && u <= 'z', u >= 'A' && u <= 'Z', u >= '0' && u <= '9':
			name = append(name, byte(u))
		default:
			name = append(name, '-')
		}
	}
	if len(name) <= maxProjectName {
		return string(name)
	}
	var h int32
	for _, u := range units {
		h = 31*h + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(name[:maxProjectName]) + "-" + strconv.FormatInt(abs, 36)
}

// resumable reports why an agent started with args cannot be resumed, or
// "" when it can.
func resumable(o Options, args []string) string {
	switch {
	case o.MCPConfigStyle != StyleClaude:
		return "only Claude Code's resume is built (not Qwen Code's)"
	case slices.Contains(args, noPersistenceFlag):
		return "the agent runs with " + noPersistenceFlag + ", so it keeps no session to resume"
	}
	return ""
}

// ForkState implements harness.Forker: between turns it returns the
// agent's session, mechanism harness.ForkResume with Data
// {"session_id":ID,"project":DIR,"model":MODEL}, once the session file is in the
// episode's config dir. Before the first turn (no session yet), with
// --no-session-persistence, for Qwen Code, or without the session file it
// returns an error wrapping harness.ErrForkUnsupported. It asks the agent
// nothing: the session file is the state.
func (a *Adapter) ForkState(ctx context.Context) (*harness.ForkState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := a.Process()
	a.mu.Lock()
	turn, session, why, cfg, project, last, model := a.turn, a.session, a.noResume, a.configDir, a.project, a.lastUUID, a.model
	a.mu.Unlock()
	switch {
	case p == nil || !p.Alive():
		return nil, harness.Fail(wire.FailureHarnessExited, "harness is not running")
	case turn != 0:
		return nil, errors.New("claude: fork state asked for during a turn")
	case why != "":
		return nil, fmt.Errorf("%s: %w", why, harness.ErrForkUnsupported)
	case session == "":
		return nil, fmt.Errorf("the agent has no session before its first turn: %w", harness.ErrForkUnsupported)
	case cfg == "":
		return nil, fmt.Errorf("the agent has no config dir (no HOME) to keep its session in: %w", harness.ErrForkUnsupported)
	}
	file := filepath.Join("projects", project, session+".jsonl")
	if err := waitWritten(ctx, beneath.Dir{Path: cfg}, file, last); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(forkData{SessionID: session, Project: project, Model: model})
	return &harness.ForkState{Mechanism: harness.ForkResume, Data: data}, nil
}

// SessionWriteTimeout bounds how long ForkState waits for Claude Code to
// write the turn's last message to its session file: it writes the file
// behind its output, so a result line can come before the file holds the
// turn's answer.
const SessionWriteTimeout = 5 * time.Second

// MaxSessionFile bounds the bytes of a session file ForkState reads; a
// longer one cannot be forked by the agent's own resume.
const MaxSessionFile = 256 << 20

// waitWritten waits, up to SessionWriteTimeout, until the session file
// (beneath the config dir, which the harness shapes: no link out of it is
// followed, a FIFO is refused, at most MaxSessionFile bytes are read)
// exists and (when uuid is not empty) holds the message uuid. A file that
// does not get there in time cannot be resumed from: the error wraps
// harness.ErrForkUnsupported.
func waitWritten(ctx context.Context, dir beneath.Dir, file, uuid string) error {
	deadline := time.NewTimer(SessionWriteTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	needle := []byte(`"uuid":"` + uuid + `"`)
	for {
		b, err := dir.ReadFile(file, MaxSessionFile)
		switch {
		case err == nil && (uuid == "" || bytes.Contains(b, needle)):
			return nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("read the agent's session file: %w", err)
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			if err != nil {
				return fmt.Errorf("the agent's session file %s is not there after %s (%w): %w", file, SessionWriteTimeout, err, harness.ErrForkUnsupported)
			}
			return fmt.Errorf("the agent's session file does not hold its last message %s after %s: %w", uuid, SessionWriteTimeout, harness.ErrForkUnsupported)
		case <-ctx.Done():
			return fmt.Errorf("wait for the agent's session file: %w", ctx.Err())
		}
	}
}

// noteMessage keeps the uuid of a top-level transcript line (a subagent's
// lines go to files of their own).
func (a *Adapter) noteMessage(l line) {
	if l.UUID == "" || (l.ParentToolUseID != nil && *l.ParentToolUseID != "") {
		return
	}
	a.mu.Lock()
	a.lastUUID = l.UUID
	a.mu.Unlock()
}

// resumeArgs checks a Launch.Fork for this adapter, puts the parent's
// session file where the sibling's Claude Code looks for it (its config
// dir's project directory for the sibling's working directory, which
// differs from the parent's when the workspace path does), and returns the
// flags that resume it as a new session and the parent's session id.
func resumeArgs(l *harness.Launch, o Options) ([]string, string, error) {
	st := l.Fork
	if st.Mechanism != harness.ForkResume {
		return nil, "", fmt.Errorf("the claude adapter continues only from a %q fork state, not %q", harness.ForkResume, st.Mechanism)
	}
	if why := resumable(o, append(append([]string(nil), l.Command...), o.ExtraArgs...)); why != "" {
		return nil, "", errors.New(why)
	}
	var d forkData
	if err := json.Unmarshal(st.Data, &d); err != nil {
		return nil, "", fmt.Errorf("the fork state is not the claude adapter's: %w", err)
	}
	if !sessionIDPattern.MatchString(d.SessionID) {
		return nil, "", fmt.Errorf("the fork state's session id %q is not a Claude Code session id", d.SessionID)
	}
	flags := []string{"--resume", d.SessionID, "--fork-session"}
	if d.Model != "" && !slices.Contains(l.Command, "--model") && o.Model == "" && !slices.Contains(o.ExtraArgs, "--model") {
		if !modelPattern.MatchString(d.Model) {
			return nil, "", fmt.Errorf("the fork state's model %q is not a model id", d.Model)
		}
		flags = append(flags, "--model", d.Model)
	}
	cfg := configDir(l)
	if cfg == "" {
		return nil, "", errors.New("no config dir (no HOME) to find the parent's session in")
	}
	// The config dir is in the sibling's HOME, a copy of the parent's,
	// shaped by the parent's harness: every look and write stays beneath it.
	dir := beneath.Dir{Path: cfg}
	projects := filepath.Join(cfg, "projects")
	want := filepath.Join(projects, launchProject(l), d.SessionID+".jsonl")
	if dir.Exists(want) {
		return flags, d.SessionID, nil
	}
	src := ""
	if d.Project != "" && filepath.IsLocal(d.Project) {
		src = filepath.Join(projects, d.Project, d.SessionID+".jsonl")
	}
	if src == "" || !dir.Exists(src) {
		// The state's project is not there: any project of the copy.
		found, _ := filepath.Glob(filepath.Join(projects, "*", d.SessionID+".jsonl"))
		if len(found) == 0 {
			return nil, "", fmt.Errorf("the parent's session %s is not in %s: the sibling's HOME must be a copy of the parent's", d.SessionID, projects)
		}
		src = found[0]
	}
	if err := dir.LinkOrCopy(src, want); err != nil {
		return nil, "", fmt.Errorf("put the parent's session where the sibling's working directory looks: %w", err)
	}
	return flags, d.SessionID, nil
}

var _ harness.Forker = (*Adapter)(nil)
