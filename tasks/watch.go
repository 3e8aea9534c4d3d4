package tasks

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The reward watch: while a task's tests run, the daemon watches the
// grading sandbox's /logs/verifier mount with fanotify, which names the
// process (its host pid) of every write and of every close of a file
// opened for writing. A reward file whose inode any process but the
// tests' own leader (bash running test.sh, or the JSONL grader) wrote is
// tampered with: its reward is withheld and the writers are the evidence.
// /logs/verifier is a mount of its own inside the sandbox, so no file
// reaches it by a hard link or a rename from elsewhere (EXDEV), and a mount
// mark sees every write on it whatever the directory.

// maxWatchedFiles bounds the files a watch keeps evidence for; a run that
// writes more distinct files on the verifier mount overflows the watch,
// which withholds the reward as an overflowed kernel queue does.
const maxWatchedFiles = 4096

// maxWritersPerFile bounds the writers kept per file.
const maxWritersPerFile = 16

// fileKey identifies an inode.
type fileKey struct{ dev, ino uint64 }

// Writer is one process that wrote a file the tests' reward was read
// from, other than the tests' own leader.
type Writer struct {
	// File is the reward file's name (reward.txt, reward.json).
	File string `json:"file"`
	// Pid is the writer's host pid; Command its name (/proc/PID/comm, when
	// it was still there to read).
	Pid     int    `json:"pid"`
	Command string `json:"command,omitempty"`
	// Events are the kinds of access seen (modify, close_write).
	Events []string `json:"events"`
}

type writerRec struct {
	comm   string
	events uint64
}

// rewardWatch is a fanotify group marking one mount.
type rewardWatch struct {
	f       *os.File
	done    chan struct{}
	stopped sync.Once

	mu       sync.Mutex
	writes   map[fileKey]map[int]*writerRec
	overflow string
}

// watchVerifier starts watching the mount that path lies on (the grading
// sandbox's /logs/verifier, reached as /proc/INIT/root/logs/verifier).
func watchVerifier(path string) (*rewardWatch, error) {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fanotify_init: %w", err)
	}
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD|unix.FAN_MARK_MOUNT, unix.FAN_MODIFY|unix.FAN_CLOSE_WRITE, unix.AT_FDCWD, path); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fanotify_mark %s: %w", path, err)
	}
	w := &rewardWatch{f: os.NewFile(uintptr(fd), "fanotify"), done: make(chan struct{}), writes: map[fileKey]map[int]*writerRec{}}
	go w.loop()
	return w, nil
}

// loop reads events until stop sets a past deadline.
func (w *rewardWatch) loop() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if n > 0 {
			w.parse(buf[:n])
		}
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				w.setOverflow("reading the watch: " + err.Error())
			}
			return
		}
	}
}

// stop ends the watch once every process of the sandbox is gone (their
// last closes are queued by then), reads what is left and closes it.
func (w *rewardWatch) stop() { w.stopped.Do(w.drain) }

func (w *rewardWatch) drain() {
	w.f.SetReadDeadline(time.Now())
	<-w.done
	w.f.SetReadDeadline(time.Time{})
	if sc, err := w.f.SyscallConn(); err == nil {
		buf := make([]byte, 64<<10)
		sc.Read(func(fd uintptr) bool {
			for {
				n, err := unix.Read(int(fd), buf)
				if n <= 0 || err != nil {
					return true
				}
				w.parse(buf[:n])
			}
		})
	}
	w.f.Close()
}

func (w *rewardWatch) setOverflow(why string) {
	w.mu.Lock()
	if w.overflow == "" {
		w.overflow = why
	}
	w.mu.Unlock()
}

// parse records the events in b.
func (w *rewardWatch) parse(b []byte) {
	const metaLen = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))
	for len(b) >= metaLen {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&b[0]))
		if m.Vers != unix.FANOTIFY_METADATA_VERSION || int(m.Event_len) < metaLen || int(m.Event_len) > len(b) {
			w.setOverflow("unreadable fanotify event")
			return
		}
		b = b[m.Event_len:]
		if m.Mask&unix.FAN_Q_OVERFLOW != 0 {
			w.setOverflow("the kernel's event queue overflowed")
		}
		if m.Fd < 0 {
			continue
		}
		var st unix.Stat_t
		err := unix.Fstat(int(m.Fd), &st)
		unix.Close(int(m.Fd))
		if err != nil {
			w.setOverflow("fstat of a written file: " + err.Error())
			continue
		}
		w.record(fileKey{uint64(st.Dev), st.Ino}, int(m.Pid), m.Mask)
	}
}

func (w *rewardWatch) record(k fileKey, pid int, mask uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	byPid := w.writes[k]
	if byPid == nil {
		if len(w.writes) >= maxWatchedFiles {
			if w.overflow == "" {
				w.overflow = fmt.Sprintf("more than %d files written on /logs/verifier", maxWatchedFiles)
			}
			return
		}
		byPid = map[int]*writerRec{}
		w.writes[k] = byPid
	}
	rec := byPid[pid]
	if rec == nil {
		if len(byPid) >= maxWritersPerFile {
			return
		}
		rec = &writerRec{comm: comm(pid)}
		byPid[pid] = rec
	}
	rec.events |= mask
}

// writers returns the processes other than leader that wrote the inode of
// path (a reward file on the host), named file in the evidence.
func (w *rewardWatch) writers(path, file string, leader int) []Writer {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Writer
	for pid, rec := range w.writes[fileKey{uint64(st.Dev), st.Ino}] {
		if pid == leader {
			continue
		}
		wr := Writer{File: file, Pid: pid, Command: rec.comm}
		if rec.events&unix.FAN_MODIFY != 0 {
			wr.Events = append(wr.Events, "modify")
		}
		if rec.events&unix.FAN_CLOSE_WRITE != 0 {
			wr.Events = append(wr.Events, "close_write")
		}
		out = append(out, wr)
	}
	return out
}

// comm is a process's name, "" once it is gone.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// checkWriters withholds res's reward when a process other than the
// tests' leader wrote one of the reward files in verifier (the host
// directory of the sandbox's /logs/verifier), or when the watch lost
// track (its queue overflowed).
func checkWriters(verifier string, res *Result) {
	w := res.watch
	if w == nil {
		return
	}
	for _, name := range []string{"reward.txt", "reward.json"} {
		res.Tampered = append(res.Tampered, w.writers(verifier+"/"+name, name, res.leader)...)
	}
	w.mu.Lock()
	overflow := w.overflow
	w.mu.Unlock()
	switch {
	case len(res.Tampered) > 0:
		wr := res.Tampered[0]
		res.Error = fmt.Sprintf("reward withheld: %s was written by pid %d (%s), not by the tests' own process (pid %d)", wr.File, wr.Pid, orUnknown(wr.Command), res.leader)
	case overflow != "":
		res.Error = "reward withheld: the reward's writers could not be checked: " + overflow
	default:
		return
	}
	res.Reward, res.Scores = nil, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "gone"
	}
	return s
}

// leaderShellDir is where the execute-only shells are inside the grading
// sandbox.
const leaderShellDir = "/.harnessd-grade"

// leaderShells copies the host's bash and sh into dir as execute-only
// files (mode 0111, the daemon's): a process that execs a file it may not
// read is not dumpable (execve sets it to suid_dumpable, 0), so no process
// without CAP_SYS_PTRACE — the tests' children included — opens its
// /proc/PID/mem. It returns each shell's name (and the usual paths) mapped
// to its copy's path inside.
func leaderShells(dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range []string{"bash", "sh"} {
		src, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if src, err = filepath.EvalSymlinks(src); err != nil {
			continue
		}
		if err := copyExecOnly(src, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		inside := leaderShellDir + "/" + name
		for _, k := range []string{name, "/bin/" + name, "/usr/bin/" + name} {
			out[k] = inside
		}
	}
	return out, nil
}

func copyExecOnly(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o111)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, 0o111)
}
