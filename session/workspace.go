package session

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
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
// or after since, within the bounds, in path order. It keeps no snapshot
// between turns. The walk is through os.Root: a directory the harness
// swaps for a link while it runs (its background processes may) cannot
// lead it outside dir, where it would list the host's names into the
// record. It reads each directory in batches, counting entries as they are
// read: fs.WalkDir reads and sorts a whole directory before it visits
// one entry, so 200,000 empty files in one directory cost the daemon 76 MB
// after every turn whatever maxWorkspaceWalk said (an outside red team).
func workspaceChanges(dir string, since time.Time) *wire.WorkspaceChanges {
	w := workspaceWalk{out: &wire.WorkspaceChanges{Changed: []string{}, Walked: 1}, from: since.Add(-workspaceTimeSlop).UnixNano()}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return w.out
	}
	defer root.Close()
	w.root = root
	pending := []string{"."}
	for len(pending) > 0 && !w.out.Partial {
		rel := pending[len(pending)-1]
		pending = w.dir(rel, pending[:len(pending)-1])
	}
	slices.Sort(w.out.Changed)
	return w.out
}

// workspaceWalk is one walk of workspaceChanges.
type workspaceWalk struct {
	root  *os.Root
	out   *wire.WorkspaceChanges
	from  int64 // ctime bound, ns
	bytes int   // of the paths listed
}

// walkBatch is how many entries of a directory are read at a time.
const walkBatch = 256

// dir reads directory rel in batches, notes each entry, and returns
// pending with rel's subdirectories added. It stops, partial, at
// maxWorkspaceWalk entries.
func (w *workspaceWalk) dir(rel string, pending []string) []string {
	f, err := w.root.Open(rel)
	if err != nil {
		return pending // gone, or unreadable: skip it
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(walkBatch)
		for _, d := range entries {
			if w.out.Walked >= maxWorkspaceWalk {
				w.out.Partial = true
				return pending
			}
			w.out.Walked++
			p := path.Join(rel, d.Name())
			if d.IsDir() {
				pending = append(pending, p)
			}
			w.note(p, d)
		}
		if err != nil {
			return pending // io.EOF, or unreadable from here
		}
	}
}

// note lists entry p when its status changed since the walk's bound,
// within the bounds of the list (counted in More beyond them).
func (w *workspaceWalk) note(p string, d fs.DirEntry) {
	info, err := d.Info()
	if err != nil {
		return
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Ctim.Nano() < w.from {
		return
	}
	if d.IsDir() {
		p += "/"
	}
	if len(w.out.Changed) >= maxChangedPaths || w.bytes+len(p) > maxChangedBytes {
		w.out.More++
		return
	}
	w.bytes += len(p)
	w.out.Changed = append(w.out.Changed, p)
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
