package oneshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/environ"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Name is the adapter's name in configurations (harness.adapter).
const Name = "exec"

// Factory makes an exec adapter for a configuration, checking its options.
func Factory(cfg *harness.Config) (harness.Adapter, error) {
	if _, err := ParseOptions(cfg.Options); err != nil {
		return nil, err
	}
	return New(), nil
}

// exitDrain is how long a turn keeps reading stdout after its process
// exited, before it kills what still holds stdout open.
const exitDrain = 2 * time.Second

// Adapter runs one process per turn and resumes the session between turns.
type Adapter struct {
	mu        sync.Mutex
	started   bool
	stopped   bool
	launch    *harness.Launch
	opts      *Options
	first     []string // template of turn 1
	next      []string // template of later turns
	env       []string
	sessionID string
	cur       *turnProc // the running (or abandoned) turn's process
	last      *turnProc // the last finished turn's process
}

// turnProc is one turn's process and its interrupt state.
type turnProc struct {
	p           *process.Process
	interrupted bool
	intr        chan struct{} // Interrupt signalled the process
	failed      bool          // the turn ended in a failure
}

// New returns an idle adapter.
func New() *Adapter { return &Adapter{} }

// Start prepares the session: it checks the options and the program, and
// writes the MCP config file. No process runs until the first turn.
func (a *Adapter) Start(ctx context.Context, l *harness.Launch) error {
	if l.Fork != nil {
		// No fork mechanism of its own (it is no harness.Forker): only a
		// replay continues its harness, which starts fresh.
		return harness.Fail(wire.FailureStartupFailed, "the %s adapter cannot continue a harness from a %q fork state", Name, l.Fork.Mechanism)
	}
	opts, err := ParseOptions(l.Options)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "bad exec options")
	}
	next := opts.Command
	if next == nil {
		if len(l.Command) == 0 {
			return harness.Fail(wire.FailureStartupFailed, "no harness command configured")
		}
		next = append([]string(nil), l.Command...)
		if err := checkTemplate(next); err != nil {
			return harness.Wrap(wire.FailureStartupFailed, err, "bad harness command")
		}
		if !strings.Contains(strings.Join(next, "\x00"), PhMessage) {
			next = append(next, PhMessage)
		}
	}
	first := opts.FirstCommand
	if first == nil {
		first = next
	}
	set, err := writeMCPConfig(opts.MCPConfig, l, opts.Env)
	if err != nil {
		return harness.Wrap(wire.FailureStartupFailed, err, "write MCP config")
	}
	names := make([]string, 0, len(opts.Env))
	for k := range opts.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		set = append(set, k+"="+opts.Env[k])
	}
	env := adapterkit.Env(l, set...)
	for _, t := range [][]string{first, next} {
		if _, err := findProgram(t[0], env, l.Workspace); err != nil {
			return harness.Wrap(wire.FailureStartupFailed, err, "harness program not found")
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.started, a.stopped = true, false
	a.launch, a.opts, a.first, a.next, a.env = l, opts, first, next, env
	a.sessionID, a.cur, a.last = "", nil, nil
	return nil
}

// findProgram resolves file as the child would, against the PATH of env.
func findProgram(file string, env []string, dir string) (string, error) {
	check := func(p string) (string, error) {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not an executable file", p)
		}
		return p, nil
	}
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) && dir != "" {
			return check(filepath.Join(dir, file))
		}
		return check(file)
	}
	path, ok := environ.Lookup(env, "PATH")
	if !ok {
		path = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if p, err := check(filepath.Join(d, file)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH", file)
}

// Turn runs the turn's command and reads its output until it exits.
func (a *Adapter) Turn(ctx context.Context, in harness.TurnInput, emit func(wire.Event)) (harness.TurnResult, error) {
	a.mu.Lock()
	if !a.started || a.stopped {
		a.mu.Unlock()
		return harness.TurnResult{}, harness.Fail(wire.FailureHarnessExited, "harness is not started")
	}
	l, o, env, sid, prev := a.launch, a.opts, a.env, a.sessionID, a.cur
	tmpl := a.next
	if in.Number <= 1 {
		tmpl = a.first
	}
	tp := &turnProc{intr: make(chan struct{}, 1)}
	a.cur = tp
	a.mu.Unlock()
	in.MarkLive() // Interrupt marks tp from here; its process gets SIGINT
	if prev != nil && prev.p != nil {
		// An abandoned turn's process (its context ended): end it first.
		prev.p.Stop(ctx, 0)
	}

	if usesSessionID(tmpl) && sid == "" {
		return a.fail(ctx, tp, harness.Fail(wire.FailureProtocol,
			"no session id was captured from an earlier turn (check session_regex / session_field)"))
	}
	argv := expand(tmpl, vars{message: in.Message, sessionID: sid, workspace: l.Workspace, turn: in.Number})
	capt := &capture{re: o.SessionRegex, field: o.SessionField}
	p, err := l.Supervisor.Start(process.Spec{
		Name:         fmt.Sprintf("harness-turn-%d", in.Number),
		Path:         argv[0],
		Args:         argv[1:],
		Dir:          l.Dir(),
		Env:          env,
		MaxLineBytes: adapterkit.MaxLineBytes(l),
		Stderr:       capt,
		Logger:       l.Logger,
		Launcher:     l.Launcher,
	})
	if err != nil {
		return a.fail(ctx, tp, harness.Wrap(wire.FailureHarnessCrashed, err, "turn process did not start"))
	}
	p.CloseStdin()
	a.mu.Lock()
	tp.p = p
	if tp.interrupted {
		signalGroup(p)
	}
	a.mu.Unlock()

	res, err := a.read(ctx, tp, in, capt, emit)
	if ctx.Err() != nil {
		return harness.TurnResult{}, ctx.Err()
	}
	// The process has exited: end what it left behind, release its pipes.
	p.Stop(ctx, l.StopGrace)
	capt.flush()
	if id := capt.found(); id != "" {
		a.mu.Lock()
		a.sessionID = id
		a.mu.Unlock()
	}
	if err != nil {
		f, ok := harness.AsFailure(err)
		if !ok {
			f = harness.Wrap(wire.FailureHarnessCrashed, err, "reading the turn's output failed")
		}
		return a.fail(ctx, tp, f)
	}
	a.mu.Lock()
	cancelled := tp.interrupted
	a.mu.Unlock()
	st, _ := p.ExitStatus()
	if res.Extra == nil {
		res.Extra = map[string]any{}
	}
	res.Extra["exit"] = st
	if id := a.session(); id != "" {
		res.Extra["session_id"] = id
	}
	res.Cancelled = cancelled
	if (st.Code != 0 || st.Signaled()) && !cancelled && !o.NonzeroOK {
		return a.fail(ctx, tp, &harness.Failure{Type: wire.FailureHarnessCrashed,
			Message: fmt.Sprintf("turn process %s", st), Exit: &st, StderrTail: p.StderrTail()})
	}
	a.finish(tp)
	return res, nil
}

// read consumes the turn's stdout until the process has exited and its
// output is drained.
func (a *Adapter) read(ctx context.Context, tp *turnProc, in harness.TurnInput, capt *capture, emit func(wire.Event)) (harness.TurnResult, error) {
	p, o := tp.p, a.opts
	ps := parsers[o.Format]()
	start := p.OutputBytes()
	values := adapterkit.NewTurnValues(in.OutputLimit)
	lines, exited := p.Lines(), p.Exited()
	var drain, grace <-chan time.Time
	for lines != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if in.OutputLimit > 0 && p.OutputBytes()-start > in.OutputLimit {
				return harness.TurnResult{}, harness.Fail(wire.FailureOutputLimit,
					"harness wrote more than %d bytes in one turn (episode.output_limit)", in.OutputLimit)
			}
			if line.TooLong {
				return harness.TurnResult{}, harness.Fail(wire.FailureOutputLimit,
					"harness wrote a %d-byte line (limit %d)", line.Size, adapterkit.MaxLineBytes(a.launch))
			}
			if err := values.Check(line.Text); err != nil {
				return harness.TurnResult{}, err
			}
			capt.stdout(line.Text)
			if err := ps.line(line.Text, emit); err != nil {
				return harness.TurnResult{}, err
			}
		case <-exited:
			exited = nil
			t := time.NewTimer(exitDrain)
			defer t.Stop()
			drain = t.C
		case <-drain:
			// Something the process left behind holds stdout open.
			drain = nil
			p.Stop(ctx, 0)
		case <-tp.intr:
			t := time.NewTimer(o.InterruptGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			grace = nil
			p.Stop(ctx, 0)
		case <-ctx.Done():
			return harness.TurnResult{}, ctx.Err()
		}
	}
	if _, err := p.Wait(ctx); err != nil {
		return harness.TurnResult{}, err
	}
	var res harness.TurnResult
	res.Response, res.Done, res.Extra = ps.result(emit)
	return res, nil
}

func (a *Adapter) session() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessionID
}

// fail ends a turn with a failure: its process is killed and kept for
// Diagnostics. The failure gets the stderr tail, and a crash the exit status.
func (a *Adapter) fail(ctx context.Context, tp *turnProc, f *harness.Failure) (harness.TurnResult, error) {
	if tp.p != nil {
		tp.p.Stop(context.WithoutCancel(ctx), 0)
		if f.Exit == nil && f.Type == wire.FailureHarnessCrashed {
			if st, ok := tp.p.ExitStatus(); ok {
				f.Exit = &st
			}
		}
		if f.StderrTail == "" {
			f.StderrTail = tp.p.StderrTail()
		}
	}
	a.mu.Lock()
	tp.failed = true
	a.mu.Unlock()
	a.finish(tp)
	return harness.TurnResult{}, f
}

func (a *Adapter) finish(tp *turnProc) {
	a.mu.Lock()
	if a.cur == tp {
		a.cur = nil
	}
	a.last = tp
	a.mu.Unlock()
}

// signalGroup sends SIGINT to the turn process's group while its leader is
// alive (so the group id cannot have been reused).
func signalGroup(p *process.Process) {
	if p.Alive() {
		p.Signal(unix.SIGINT)
	}
}

// Interrupt sends SIGINT to the running turn's process group; if it has not
// exited after interrupt_grace it is killed. The turn returns Cancelled.
func (a *Adapter) Interrupt(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	tp := a.cur
	if tp == nil {
		return harness.ErrNoTurn
	}
	if tp.interrupted {
		return nil
	}
	tp.interrupted = true
	if tp.p != nil {
		signalGroup(tp.p)
	}
	select {
	case tp.intr <- struct{}{}:
	default:
	}
	return nil
}

// Stop kills a running turn's process tree; the session cannot take turns
// afterwards (until the next Start).
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	a.stopped = true
	var procs []*process.Process
	for _, tp := range []*turnProc{a.cur, a.last} {
		if tp != nil && tp.p != nil {
			procs = append(procs, tp.p)
		}
	}
	grace := time.Duration(0)
	if a.launch != nil {
		grace = a.launch.StopGrace
	}
	a.mu.Unlock()
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.Stop(ctx, grace))
	}
	return errors.Join(errs...)
}

// Alive reports whether the session can take turns: between Start and Stop
// (the harness is the resumable session, not a process).
func (a *Adapter) Alive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.started && !a.stopped
}

// Diagnostics reports the last failed turn's exit status, and the stderr
// tail and pid of the current or last turn's process.
func (a *Adapter) Diagnostics() (*process.ExitStatus, string, int) {
	a.mu.Lock()
	tp := a.cur
	if tp == nil || tp.p == nil {
		tp = a.last
	}
	failed := tp != nil && tp.failed
	a.mu.Unlock()
	if tp == nil || tp.p == nil {
		return nil, "", 0
	}
	var exit *process.ExitStatus
	if st, ok := tp.p.ExitStatus(); ok && failed {
		exit = &st
	}
	return exit, tp.p.StderrTail(), tp.p.Pid()
}
