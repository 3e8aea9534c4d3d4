package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/creack/pty"

	"github.com/harnessd/harnessd/internal/linux/cgroups"
	"github.com/harnessd/harnessd/process/internal/cgtree"
)

// Mode says whether a kill mechanism is used.
type Mode string

// Mechanism modes.
const (
	ModeAuto     Mode = ""         // use it when the machine allows, otherwise degrade
	ModeOff      Mode = "off"      // never use it
	ModeRequired Mode = "required" // fail NewSupervisor when unavailable
)

// Options configure a Supervisor.
type Options struct {
	// Cgroup controls the cgroup v2 leaf per process tree.
	Cgroup Mode
	// CgroupRoot overrides the cgroup v2 directory under which the daemon's
	// own directory is made; empty means the daemon's own cgroup.
	CgroupRoot string
	// KillLeftovers lets the start's sweep of gone daemons' cgroup
	// directories kill the processes still in them (a SIGKILLed daemon's
	// surviving grandchildren) before removing them. Off, the sweep removes
	// only empty leftovers and leaves populated ones alone (logged): their
	// processes were started by another daemon, which on a shared host may
	// be anyone's. The harnessd commands turn it on with --kill-leftovers,
	// for a daemon restarted in a cgroup where every daemon is its own.
	KillLeftovers bool
	// Subreaper controls PR_SET_CHILD_SUBREAPER for the daemon.
	Subreaper Mode
	// ReapOrphans runs a background reaper for orphans re-parented to the
	// daemon (always on when the daemon is PID 1).
	ReapOrphans bool
	// Logger receives lifecycle records; nil means slog.Default().
	Logger *slog.Logger
}

// Mechanisms reports the isolation and kill mechanisms in use.
type Mechanisms struct {
	ProcessGroups bool   `json:"process_groups"`
	Pdeathsig     bool   `json:"pdeathsig"`
	Subreaper     bool   `json:"subreaper"`
	Cgroup        bool   `json:"cgroup"`
	CgroupPath    string `json:"cgroup_path,omitempty"`
	PTY           bool   `json:"pty"`
	PID1          bool   `json:"pid1"`
	OrphanReaper  bool   `json:"orphan_reaper"`
	// PeerCheck names how PeerOf tells a harness peer: PeerCheckCgroup or
	// PeerCheckAncestry (see Notes for why not the first).
	PeerCheck string   `json:"peer_check"`
	Notes     []string `json:"notes,omitempty"`
}

// KillMode names the strongest mechanism that ends a whole tree.
func (m Mechanisms) KillMode() string {
	var parts []string
	if m.Cgroup {
		parts = append(parts, "cgroup")
	}
	if m.Subreaper {
		parts = append(parts, "subreaper")
	}
	parts = append(parts, "pgroup")
	return strings.Join(parts, "+")
}

// Supervisor starts and tracks process trees. One daemon has one Supervisor;
// Close stops every tree it still owns.
type Supervisor struct {
	mech     Mechanisms
	cg       *cgtree.Manager
	members  *cgtree.Membership // the peer check by cgroup; nil: by ancestry
	sockDiag bool               // sock_diag answers (for the socket's inode by ancestry too)
	// cgMount locates cgroup v2 paths of /proc/PID/cgroup
	// (with cgroup leaves only).
	cgMount cgroups.Mount
	// escapees counts the members outside the daemon's cgroup directory at
	// the tracker's last pass (the peer check looks for them only then).
	escapees   atomic.Int64
	log        *slog.Logger
	cancel     context.CancelFunc // stops the orphan reaper, if any
	reaped     chan struct{}
	stopReaper sync.Once
	// While any tree is live a tracker records every tree's members (by
	// ancestry, or from its cgroup leaf), so that Stop can find members
	// that both detached and scrubbed their environment, and the peer check
	// members that left their leaf.
	stopTrack context.CancelFunc // stops the running tracker; nil when none runs (guarded by mu)
	tracked   chan struct{}      // closed when that tracker has ended

	mu     sync.Mutex
	live   map[*Process]struct{}
	closed bool
}

// NewSupervisor detects the available mechanisms and prepares them.
func NewSupervisor(opts Options) (*Supervisor, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Supervisor{log: log, live: make(map[*Process]struct{})}
	m := &s.mech
	m.ProcessGroups = true
	m.Pdeathsig = true
	m.PID1 = os.Getpid() == 1

	switch opts.Subreaper {
	case ModeOff:
		m.Notes = append(m.Notes, "subreaper: off by configuration")
	default:
		if err := enableSubreaper(); err != nil {
			if opts.Subreaper == ModeRequired {
				return nil, fmt.Errorf("subreaper required: %w", err)
			}
			m.Notes = append(m.Notes, "subreaper: "+err.Error())
		} else {
			m.Subreaper = true
		}
	}

	switch opts.Cgroup {
	case ModeOff:
		m.Notes = append(m.Notes, "cgroup: off by configuration")
	default:
		cg, err := cgtree.New(opts.CgroupRoot, opts.KillLeftovers, log)
		if err != nil {
			if opts.Cgroup == ModeRequired {
				return nil, fmt.Errorf("cgroup v2 required: %w", err)
			}
			m.Notes = append(m.Notes, "cgroup: "+err.Error())
		} else {
			s.cg = cg
			m.Cgroup = true
			m.CgroupPath = cg.Parent()
		}
	}

	m.PeerCheck = PeerCheckAncestry
	diagErr := probeSockDiag()
	s.sockDiag = diagErr == nil
	if s.cg == nil {
		m.Notes = append(m.Notes, "peer check: no cgroup leaves; scanning /proc for the trees' processes by ancestry")
	} else if diagErr != nil {
		m.Notes = append(m.Notes, "peer check: sock_diag unusable ("+diagErr.Error()+"); scanning /proc for the trees' processes by ancestry")
	} else {
		s.members = cgtree.NewMembership(s.cg)
		m.PeerCheck = PeerCheckCgroup
	}

	if ptmx, tty, err := pty.Open(); err != nil {
		m.Notes = append(m.Notes, "pty: "+err.Error())
	} else {
		ptmx.Close()
		tty.Close()
		m.PTY = true
	}

	if s.cg != nil {
		// Where the tracker looks a member's cgroup up (escapees).
		if l, err := cgroups.Find(); err == nil {
			s.cgMount = l.V2
		}
	}

	if opts.ReapOrphans || m.PID1 {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		s.reaped = make(chan struct{})
		m.OrphanReaper = true
		go reapLoop(ctx, s.reaped)
	}
	log.Debug("process supervisor ready", "kill_mode", m.KillMode(), "pty", m.PTY, "pid1", m.PID1, "notes", m.Notes)
	return s, nil
}

// Mechanisms returns what NewSupervisor detected.
func (s *Supervisor) Mechanisms() Mechanisms {
	m := s.mech
	m.Notes = append([]string(nil), s.mech.Notes...)
	return m
}

// ErrSupervisorClosed is returned by Start after Close.
var ErrSupervisorClosed = errors.New("process supervisor is closed")

func (s *Supervisor) track(p *Process) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSupervisorClosed
	}
	s.live[p] = struct{}{}
	if s.stopTrack == nil {
		s.startTracker()
	}
	return nil
}

// untrack forgets p; the last tree's untrack stops the tracker and waits
// for it to end.
func (s *Supervisor) untrack(p *Process) {
	s.mu.Lock()
	delete(s.live, p)
	var done chan struct{}
	if len(s.live) == 0 && s.stopTrack != nil {
		s.stopTrack()
		done = s.tracked
		s.stopTrack, s.tracked = nil, nil
	}
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// startTracker starts the member tracker (trackLoop); s.mu is held. It runs
// only while some tree is live.
func (s *Supervisor) startTracker() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stopTrack, s.tracked = cancel, done
	go s.trackLoop(ctx, done)
}

// Live returns how many trees are started and not yet stopped.
func (s *Supervisor) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// Kill sends SIGKILL to every live tree at once — through its cgroup where it
// has one, else to its process group or session — without waiting, and
// returns how many trees it signalled. Stops already in progress (however
// long their grace) then finish promptly, sweeping up escapees as usual. It
// is for a forced exit (a second signal, an overrun drain); Close must still
// be called.
func (s *Supervisor) Kill() int {
	s.mu.Lock()
	procs := make([]*Process, 0, len(s.live))
	for p := range s.live {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	n := 0
	for _, p := range procs {
		select {
		case <-p.stopped:
			continue // already gone; its pid may be reused
		default:
		}
		p.killTree()
		n++
	}
	if n > 0 {
		s.log.Warn("killed every process tree", "trees", n)
	}
	return n
}

// Close stops every live tree with the given grace, stops the orphan reaper
// and removes the daemon's cgroup directory. It is safe to call more than
// once, also concurrently; a later call waits for trees still stopping.
func (s *Supervisor) Close(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	s.closed = true
	procs := make([]*Process, 0, len(s.live))
	for p := range s.live {
		procs = append(procs, p)
	}
	s.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Stop(ctx, grace)
		}()
	}
	wg.Wait()
	s.stopReaper.Do(func() {
		if s.cancel != nil {
			s.cancel()
			<-s.reaped
		}
	})
	if s.cg != nil {
		errs = append(errs, s.cg.Close())
	}
	return errors.Join(errs...)
}
