// Package spawner starts a sandbox's init for the daemon from a small
// long-lived process, the spawner: the init binary in a mode of its own,
// a child of the daemon. A clone with CLONE_NEWUSER cannot be a vfork
// (Go's forkExec waits in the parent to write the child's id maps), so
// starting an init from the daemon copied the daemon's page tables,
// write-protected its heap (copy-on-write faults and TLB shootdowns in
// every daemon thread afterwards) and held its memory map's lock
// throughout: 22% of the daemon's CPU in a 16-session sandboxed reset
// storm. The spawner's copy is a small process's. Each init is the
// spawner's child (Pdeathsig: it dies with the spawner, which dies with
// the daemon, and exits when the daemon's end of its channel closes); the
// spawner reaps it, reports its exit status, and passes the daemon a pidfd
// to signal it by.
//
// It owns the spawner process, the messages on its channel and the
// daemon's handle on each init (Init); it knows nothing of what an init
// does (package process/sandbox) and must not touch namespaces, mounts or
// cgroups itself.
package spawner

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/linux/session"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/process/sandbox/internal/control"
)

// Command is the hidden subcommand (argv[1]) the init binary runs the
// spawner under; the binary's main must call Run then (process/sandbox's
// Init does).
const Command = "__sandbox-spawner"

// Message types.
const (
	msgSpawn   = "spawn"   // daemon -> spawner: Spec, the init's files attached
	msgSpawned = "spawned" // spawner -> daemon: the init's pid, its pidfd attached
	msgError   = "error"   // spawner -> daemon: the init did not start (Code: its errno)
	msgExit    = "exit"    // spawner -> daemon: the init's exit status
)

// message is every message of the channel; fields by type.
type message struct {
	Type   string `json:"type"`
	ID     int64  `json:"id"` // the request's, in its replies
	Spawn  *Spec  `json:"spawn,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	Code   int    `json:"code,omitempty"`
	Signal string `json:"signal,omitempty"`
	Error  string `json:"error,omitempty"`
}

// controlFD is the spawner's channel to the daemon.
const controlFD = 3

func send(c *net.UnixConn, m message, fds ...int) error { return control.Send(c, m, fds...) }

func receive(c *net.UnixConn) (message, []*os.File, error) {
	var m message
	files, err := control.Receive(c, &m)
	return m, files, err
}

// Spec is how the spawner starts one init: the program, the
// namespaces, the id maps, and (Root) inside ids 0:0 explicitly, as the
// daemon's host ids are not in a private range's map. The files attached
// become the init's descriptors 0, 1, 2, 3 (its control socket), ...
type Spec struct {
	Path       string                 `json:"path"`
	Args       []string               `json:"args"`
	Cloneflags uintptr                `json:"cloneflags"`
	UIDMaps    []syscall.SysProcIDMap `json:"uid_maps"`
	GIDMaps    []syscall.SysProcIDMap `json:"gid_maps"`
	Setgroups  bool                   `json:"setgroups"`
	Root       bool                   `json:"root"`
}

func (sp Spec) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Cloneflags: sp.Cloneflags, UidMappings: sp.UIDMaps, GidMappings: sp.GIDMaps,
		GidMappingsEnableSetgroups: sp.Setgroups, Pdeathsig: syscall.SIGKILL,
		// A session (and so a scheduling group) of its own: with the
		// single id map the harness owns the init's /proc files, and
		// in the daemon's (or the spawner's) session its
		// /proc/1/autogroup would be theirs to lower.
		Setsid: true,
	}
	if sp.Root {
		a.Credential = &syscall.Credential{Uid: 0, Gid: 0}
	}
	return a
}

// Run is the spawner: one init per spawn message, each started,
// waited for and reported by a goroutine of its own, until the daemon
// closes the channel. Then it kills the inits it still has, reaps them
// (so that their CPU time reaches the daemon's, through this process's,
// when the daemon reaps it) and exits. Should it die first, its inits die
// with it (Pdeathsig).
func Run() int {
	// As root the spawner is not dumpable: its /proc files are root's,
	// whatever uid it runs as later. Not as any other uid: a child forked
	// into a new user namespace stays non-dumpable until it execs, which
	// makes its /proc/PID/uid_map root's, and an unprivileged spawner could
	// then not write the child's id map (EACCES; every sandbox of a non-root
	// daemon failed so). The harness in a sandbox cannot name the spawner
	// (another PID namespace), and the daemon itself is dumpable.
	if os.Geteuid() == 0 {
		unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
	// An init gets the files of its request and no other descriptor: not
	// those the daemon inherited without close-on-exec.
	unix.CloseRange(controlFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	// Its inits inherit SCHED_BATCH: waking between runs, they do not
	// preempt the agents (session.Batch). Without it they only cost more.
	if err := session.Batch(); err != nil {
		fmt.Fprintln(os.Stderr, "harnessd sandbox spawner: the sandboxes' inits run as SCHED_OTHER:", err)
	}
	conn, err := control.Conn(os.NewFile(controlFD, "sandbox-spawner"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd sandbox spawner:", err)
		return 125
	}
	var sendMu sync.Mutex
	reply := func(m message, fds ...int) {
		sendMu.Lock()
		defer sendMu.Unlock()
		send(conn, m, fds...)
	}
	var inits liveInits
	for {
		m, files, err := receive(conn)
		if err != nil {
			inits.killAndWait()
			return 0
		}
		if m.Type != msgSpawn || m.Spawn == nil {
			control.CloseAll(files)
			continue
		}
		inits.wg.Add(1)
		go func() {
			defer inits.wg.Done()
			spawnInit(m.ID, *m.Spawn, files, reply, &inits)
		}()
	}
}

// liveInits are the spawner's running inits.
type liveInits struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	procs map[*os.Process]bool
	ended bool // killAndWait has begun: kill what starts now
}

// add records p, or kills it once the spawner is ending.
func (l *liveInits) add(p *os.Process) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		p.Kill()
		return
	}
	if l.procs == nil {
		l.procs = map[*os.Process]bool{}
	}
	l.procs[p] = true
}

func (l *liveInits) remove(p *os.Process) {
	l.mu.Lock()
	delete(l.procs, p)
	l.mu.Unlock()
}

// killAndWait kills every init and waits until each is reaped.
func (l *liveInits) killAndWait() {
	l.mu.Lock()
	l.ended = true
	for p := range l.procs {
		p.Kill()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// spawnInit starts one init with files, reports its pid (with a pidfd)
// or why it did not start, then waits for it and reports its exit.
func spawnInit(id int64, sp Spec, files []*os.File, reply func(message, ...int), inits *liveInits) {
	p, err := os.StartProcess(sp.Path, sp.Args, &os.ProcAttr{Dir: "/", Env: []string{}, Files: files, Sys: sp.sysProcAttr()})
	control.CloseAll(files)
	if err == nil {
		inits.add(p)
		defer inits.remove(p)
		var pidfd int
		if pidfd, err = unix.PidfdOpen(p.Pid, 0); err == nil { // before Wait: the pid is the init's
			reply(message{Type: msgSpawned, ID: id, Pid: p.Pid}, pidfd)
			unix.Close(pidfd)
			ps, werr := p.Wait()
			st := initStatus(ps, werr)
			reply(message{Type: msgExit, ID: id, Pid: p.Pid, Code: st.Code, Signal: st.Signal})
			return
		}
		p.Kill()
		p.Wait()
	}
	var en syscall.Errno
	errors.As(err, &en)
	reply(message{Type: msgError, ID: id, Code: int(en), Error: err.Error()})
}

// Init is a started init as the daemon holds it.
type Init struct {
	Pid     int
	pidfd   *os.File     // to signal it by; closed once it has exited
	started chan message // the spawner's spawned or error reply
	exited  chan struct{}
	status  process.ExitStatus // valid once exited is closed
}

// Signal sends sig to the init; os.ErrProcessDone once it has exited.
func (p *Init) Signal(sig syscall.Signal) error {
	rc, err := p.pidfd.SyscallConn()
	if err != nil {
		return os.ErrProcessDone
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.PidfdSendSignal(int(fd), sig, nil, 0) }); err != nil {
		return os.ErrProcessDone // the pidfd is closed: the init has exited
	}
	if errors.Is(serr, unix.ESRCH) {
		return os.ErrProcessDone
	}
	return serr
}

// Kill sends the init SIGKILL.
func (p *Init) Kill() { p.Signal(syscall.SIGKILL) }

// Wait returns the init's exit status once it has exited (or the spawner
// that started it has: SIGKILL, as its Pdeathsig).
func (p *Init) Wait() process.ExitStatus {
	<-p.exited
	return p.status
}

// spawner is the daemon's end of one spawner process.
type spawner struct {
	conn   *net.UnixConn
	sendMu sync.Mutex
	mu     sync.Mutex
	nextID int64
	procs  map[int64]*Init // by spawn id, until exited; nil once the spawner is gone
	dead   chan struct{}
}

// spawners keeps one spawner per init binary (Config.Init).
var spawners = struct {
	sync.Mutex
	m map[string]*spawner
}{m: map[string]*spawner{}}

// Stop ends the spawners (each kills the inits it still has) and
// waits for them. Call it as the daemon exits, once its sandboxes are
// closed: the spawners and their inits are then reaped, and their CPU time
// is the daemon's, and the thread that forked them ends. A later Start
// starts both again.
func Stop() {
	spawners.Lock()
	all := spawners.m
	spawners.m = map[string]*spawner{}
	spawners.Unlock()
	for _, sp := range all {
		sp.conn.Close()
		<-sp.dead
	}
	// The thread that forked them goes too, unless a Start meanwhile
	// forked a spawner from it (Start forks under spawners' lock).
	spawners.Lock()
	if len(spawners.m) == 0 {
		stopForker()
	}
	spawners.Unlock()
}

// errSpawnerGone reports a spawner that exited.
var errSpawnerGone = errors.New("the sandbox spawner exited")

// Start starts an init through the spawner of the binary path,
// starting that spawner first when there is none (or it has exited).
func Start(path string, spec Spec, files []*os.File) (*Init, error) {
	spawners.Lock()
	sp := spawners.m[path]
	if sp == nil || sp.gone() {
		var err error
		if sp, err = startSpawner(path); err != nil {
			spawners.Unlock()
			return nil, err
		}
		spawners.m[path] = sp
	}
	spawners.Unlock()
	return sp.spawn(spec, files)
}

func (sp *spawner) gone() bool {
	select {
	case <-sp.dead:
		return true
	default:
		return false
	}
}

// startSpawner starts the spawner of binary path: the daemon's child in a
// process group of its own (a terminal's signals are the daemon's to
// handle), dying with the daemon (Pdeathsig).
func startSpawner(path string) (*spawner, error) {
	mine, theirs, err := control.Pair()
	if err != nil {
		return nil, err
	}
	conn, err := control.Conn(mine)
	if err != nil {
		theirs.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: path, Args: []string{"harnessd-sandbox-spawner", Command}, Env: []string{}, Dir: "/",
		ExtraFiles: []*os.File{theirs}, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true},
	}
	onForkerThread(func() { err = process.StartCommand(cmd) })
	theirs.Close()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("start the sandbox spawner %s: %w", path, err)
	}
	sp := &spawner{conn: conn, procs: map[int64]*Init{}, dead: make(chan struct{})}
	go sp.read(cmd)
	return sp, nil
}

// spawnerForker is the daemon's thread that forks every spawner, locked
// to its goroutine and ending only when no spawner is left (Stop). A
// parent-death signal follows the
// thread that forked the child, not the process: a spawner forked from
// any thread died with that thread's end (a goroutine that exits locked
// ends its thread), and outlived the daemon behind a thread its death
// left in an uninterruptible wait (a FIFREEZE that a harness's write held
// off: a red team's SIGKILLed daemon stayed a zombie, and its spawner and
// every sandbox with it ran on for minutes).
var spawnerForker struct {
	mu     sync.Mutex
	starts chan func() // nil until the first start, and after stopForker
}

// onForkerThread runs f on spawnerForker's thread, starting that thread
// first when there is none, and returns when f has.
func onForkerThread(f func()) {
	spawnerForker.mu.Lock()
	defer spawnerForker.mu.Unlock()
	if spawnerForker.starts == nil {
		starts := make(chan func())
		spawnerForker.starts = starts
		go func() {
			runtime.LockOSThread() // never unlocked: see spawnerForker
			for f := range starts {
				f()
			}
		}() // its thread ends with it (stopForker)
	}
	done := make(chan struct{})
	spawnerForker.starts <- func() {
		defer close(done)
		f()
	}
	<-done
}

// stopForker ends spawnerForker's thread. Call it only once no spawner it
// forked is alive: its end is their parent-death signal.
func stopForker() {
	spawnerForker.mu.Lock()
	defer spawnerForker.mu.Unlock()
	if spawnerForker.starts != nil {
		close(spawnerForker.starts)
		spawnerForker.starts = nil
	}
}

// spawn has the spawner start one init with files (which stay the
// caller's) and returns it once started.
func (sp *spawner) spawn(spec Spec, files []*os.File) (*Init, error) {
	p := &Init{started: make(chan message, 1), exited: make(chan struct{})}
	sp.mu.Lock()
	if sp.procs == nil {
		sp.mu.Unlock()
		return nil, errSpawnerGone
	}
	sp.nextID++
	id := sp.nextID
	sp.procs[id] = p
	sp.mu.Unlock()
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	sp.sendMu.Lock()
	err := send(sp.conn, message{Type: msgSpawn, ID: id, Spawn: &spec}, fds...)
	sp.sendMu.Unlock()
	if err != nil {
		sp.mu.Lock()
		delete(sp.procs, id)
		sp.mu.Unlock()
		return nil, err
	}
	m := <-p.started // an error reply when the spawner exits first (read)
	if m.Type != msgSpawned {
		err := errors.New(m.Error)
		if m.Code != 0 {
			err = fmt.Errorf("%s: %w", m.Error, syscall.Errno(m.Code))
		}
		return nil, err
	}
	return p, nil
}

// read routes the spawner's replies to their inits until it exits, then
// ends every init it had (they died with it: Pdeathsig).
func (sp *spawner) read(cmd *exec.Cmd) {
	for {
		m, files, err := receive(sp.conn)
		if err != nil {
			break
		}
		sp.mu.Lock()
		p := sp.procs[m.ID]
		if p != nil && m.Type != msgSpawned {
			delete(sp.procs, m.ID)
		}
		sp.mu.Unlock()
		switch {
		case p == nil:
		case m.Type == msgSpawned && len(files) == 1:
			p.Pid, p.pidfd, files = m.Pid, files[0], nil
			p.started <- m
		case m.Type == msgExit:
			p.status = process.ExitStatus{Code: m.Code, Signal: m.Signal}
			close(p.exited)
			p.pidfd.Close()
		default: // an error, or a spawned reply without its pidfd
			why := m.Error
			if m.Type == msgSpawned {
				why = fmt.Sprintf("the spawner's reply for init %d carried no pidfd", m.Pid)
			}
			p.started <- message{Type: msgError, Code: m.Code, Error: why}
		}
		control.CloseAll(files)
	}
	cmd.Wait()
	process.ReleaseCommand(cmd.Process.Pid)
	sp.conn.Close()
	sp.mu.Lock()
	procs := sp.procs
	sp.procs = nil
	sp.mu.Unlock()
	close(sp.dead)
	for _, p := range procs {
		select {
		case p.started <- message{Type: msgError, Error: errSpawnerGone.Error()}:
		default:
		}
		if p.Pid != 0 {
			p.status = process.ExitStatus{Code: -1, Signal: "SIGKILL"}
			close(p.exited)
			p.pidfd.Close()
		}
	}
}

// initStatus is how a process ended, from its wait.
func initStatus(ps *os.ProcessState, err error) process.ExitStatus {
	if ps == nil {
		return process.ExitStatus{Code: -1, Signal: "unknown"}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return process.ExitStatus{Code: ps.ExitCode()}
	case ws.Signaled():
		return process.ExitStatus{Code: -1, Signal: unix.SignalName(ws.Signal())}
	default:
		return process.ExitStatus{Code: ws.ExitStatus()}
	}
}
