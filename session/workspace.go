package session

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/wire"
)

// Bounds of a turn's workspace record: entries walked, paths and their
// bytes listed.
const (
	maxWorkspaceWalk  = 20000
	maxChangedPaths   = 200
	maxChangedBytes   = 16 << 10
	workspaceTimeSlop = 10 * time.Millisecond // file times are coarser than the clock
)

// workspaceChanges walks dir (not following symbolic links) and lists the
// entries whose status changed (ctime, which no program can set back) at
// or after since, within the bounds. It keeps no snapshot between turns.
// The walk is through os.Root: a directory the harness swaps for a link
// while it runs (its background processes may) cannot lead it outside
// dir, where it would list the host's names into the record.
func workspaceChanges(dir string, since time.Time) *wire.WorkspaceChanges {
	out := &wire.WorkspaceChanges{Changed: []string{}}
	from := since.Add(-workspaceTimeSlop).UnixNano()
	bytes := 0
	root, err := os.OpenRoot(dir)
	if err != nil {
		return out
	}
	defer root.Close()
	fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or unreadable: skip it
		}
		if out.Walked >= maxWorkspaceWalk {
			out.Partial = true
			return fs.SkipAll
		}
		out.Walked++
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || st.Ctim.Nano() < from {
			return nil
		}
		if d.IsDir() {
			rel += "/"
		}
		if len(out.Changed) >= maxChangedPaths || bytes+len(rel) > maxChangedBytes {
			out.More++
			return nil
		}
		bytes += len(rel)
		out.Changed = append(out.Changed, rel)
		return nil
	})
	return out
}

// noteWorkspace writes turn n's workspace record, when the episode is
// recorded, workspace.record_changes asks for it, and its workspace is
// there. The walk costs about what listing the workspace does (ls -lR),
// added to the end of every turn, hence opt-in.
func (s *Session) noteWorkspace(r *run, n int, since time.Time) {
	if s.cfg.RecordDir == "" || !s.cfg.Workspace.RecordChanges || r.ep == nil {
		return
	}
	dir := r.ep.Dirs().Workspace
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) || dir == "" {
		return
	}
	s.events.Note(wire.Record{Kind: wire.RecordWorkspace, Time: wire.Now(), Turn: n, Workspace: workspaceChanges(dir, since)})
}
