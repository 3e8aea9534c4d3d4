package eventlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/wire"
)

// recordFlushBound bounds how long a kept event waits in the Recorder's
// buffer before it is written to the record file: the Log's flusher
// writes it (and the text of an open run) at most this long after it was
// kept, so the file follows a running turn, and a daemon killed mid-turn
// leaves what the turn did up to then. The records of resets, messages and
// observations are written at once. docs/benchmarks.md ("Record files
// within a turn") measures this against a write per event.
const recordFlushBound = 100 * time.Millisecond

// Recorder appends an episode's records to a JSONL file through a bounded
// buffer (writes beyond it go straight through).
type Recorder struct {
	f    *os.File
	w    *bufio.Writer
	name string // the file's name in the record directory
}

// ErrEpisodeIDInUse is returned by OpenRecorder for an episode id whose
// record file a live episode holds (in this daemon or another one sharing
// record_dir): a client-chosen id may be reused once its episode has ended,
// never by two live episodes at once.
var ErrEpisodeIDInUse = errors.New("episode id in use: a live episode records to it")

// OpenRecorder opens (creating it, or appending to it) the record file of
// episodeID in dir, and holds it (an exclusive flock, released when the
// Recorder closes): a second live episode of the same id gets
// ErrEpisodeIDInUse instead of interleaving its records into the first's
// lines, or cutting the first's unterminated last line as a "cut line".
func OpenRecorder(dir, episodeID string) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create record directory: %w", err)
	}
	name := filepath.Base(recordfile.Record(dir, episodeID))
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open trajectory record: %w", err)
	}
	if err := holdRecord(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("episode %q (record %s): %w", episodeID, name, err)
	}
	if err := dropCutLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open trajectory record %s: %w", name, err)
	}
	return &Recorder{f: f, w: bufio.NewWriterSize(f, 64<<10), name: name}, nil
}

// holdRecord takes f's exclusive flock without waiting: ErrEpisodeIDInUse
// when another open of the file holds it. A file system without flock
// (ENOLCK, EOPNOTSUPP) records unheld, as before.
func holdRecord(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB); lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch {
	case lerr == nil, errors.Is(lerr, unix.ENOLCK), errors.Is(lerr, unix.EOPNOTSUPP):
		return nil
	case errors.Is(lerr, unix.EWOULDBLOCK):
		return ErrEpisodeIDInUse
	}
	return fmt.Errorf("lock: %w", lerr)
}

// dropCutLine truncates f, a record file an episode appends to (its id was
// used before), after its last newline: a daemon killed while writing a
// line leaves that line cut short, and the next episode's reset must start
// a line of its own.
func dropCutLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	buf := make([]byte, 4096)
	for end > 0 {
		n := int64(len(buf))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return fmt.Errorf("read its end: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end == st.Size() {
		return nil
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("drop its cut last line: %w", err)
	}
	return nil
}

// write appends an event record for e.
func (r *Recorder) write(e wire.Event) {
	if r == nil {
		return
	}
	// The copy is taken here, not e's address: e would be moved to the
	// heap at every call, a log without a record too (an allocation per
	// event, issue 28).
	ev := e
	r.note(wire.Record{Kind: wire.RecordEvent, Time: ev.Timestamp, Event: &ev})
}

// note appends rec.
func (r *Recorder) note(rec wire.Record) {
	if r == nil {
		return
	}
	if rec.Time == 0 {
		rec.Time = float64(time.Now().UnixMicro()) / 1e6
	}
	b, err := wire.MarshalNoEscape(rec)
	if err != nil {
		return
	}
	r.w.Write(b)
	r.w.WriteByte('\n')
}

func (r *Recorder) flush() {
	if r != nil {
		r.w.Flush()
	}
}

func (r *Recorder) close() {
	if r != nil {
		r.w.Flush()
		r.f.Close()
	}
}
