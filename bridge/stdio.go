package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/process"
)

// Defaults for StdioSpec fields left zero.
const (
	DefaultStopGrace    = 2 * time.Second
	DefaultStartTimeout = 30 * time.Second
)

// StdioSpec describes an upstream MCP server spoken to over stdio.
type StdioSpec struct {
	// Name identifies the source.
	Name string
	// Command is the program and its arguments.
	Command []string
	// Env is the complete environment of the upstream; nil means
	// process.DefaultEnviron(nil) (an allowlist of the daemon's).
	Env []string
	// Dir is the working directory; empty means the daemon's.
	Dir string
	// CallTimeout bounds each call (and each tools/list); zero means
	// DefaultCallTimeout, negative means none. An upstream that stops
	// reading its stdin for this long is killed.
	CallTimeout time.Duration
	// StopGrace is how long Close and Restart wait after SIGTERM before
	// SIGKILL; zero means DefaultStopGrace, negative kills at once.
	StopGrace time.Duration
	// StartTimeout bounds spawn plus initialize; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Launcher, when set, starts the server somewhere other than as the
	// daemon's child (a sandbox; process.Spec.Launcher); Dir is then a
	// path there.
	Launcher process.Launcher
}

// stdioSource is a Source over a supervised child process.
type stdioSource struct {
	spec   StdioSpec
	sup    *process.Supervisor
	log    *slog.Logger
	router *progressRouter

	mu  sync.Mutex // serializes Start, Restart and Close
	cur atomic.Pointer[stdioConn]
}

// stdioConn is one running upstream process and its MCP connection.
type stdioConn struct {
	p      *process.Process
	m      *mcpConn
	stdin  *stdinWriter
	broken atomic.Bool // stdin write timed out; the process is being killed
}

// NewStdioSource returns a Source that runs spec.Command through sup (its
// own process group, supervised like every child of the daemon) and speaks
// MCP over its stdin/stdout. Nothing is started until Start. The returned
// Source also has a Pid() int method (0 when not running).
func NewStdioSource(spec StdioSpec, sup *process.Supervisor, log *slog.Logger) Source {
	log = orDefault(log).With("source", spec.Name)
	return &stdioSource{spec: spec, sup: sup, log: log, router: newProgressRouter(spec.Name)}
}

// Name implements Source.
func (s *stdioSource) Name() string { return s.spec.Name }

// Pid returns the upstream's pid, or 0 when it is not started.
func (s *stdioSource) Pid() int {
	if c := s.cur.Load(); c != nil {
		return c.p.Pid()
	}
	return 0
}

func (s *stdioSource) grace() time.Duration {
	switch {
	case s.spec.StopGrace == 0:
		return DefaultStopGrace
	case s.spec.StopGrace < 0:
		return 0
	}
	return s.spec.StopGrace
}

// Start spawns and initializes the upstream unless it is running. An
// upstream that has exited is replaced.
func (s *stdioSource) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur.Load(); c != nil {
		if c.p.Alive() && !c.broken.Load() {
			return nil
		}
		s.cur.Store(nil)
		s.stopConn(ctx, c)
	}
	return s.spawn(ctx)
}

// Restart stops the upstream (if any) and starts a new one.
func (s *stdioSource) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.cur.Swap(nil); c != nil {
		if err := s.stopConn(ctx, c); err != nil {
			return fmt.Errorf("restart tool server '%s': %w", s.spec.Name, err)
		}
	}
	return s.spawn(ctx)
}

// Close stops the upstream's process tree.
func (s *stdioSource) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cur.Swap(nil)
	if c == nil {
		return nil
	}
	if err := s.stopConn(ctx, c); err != nil {
		return fmt.Errorf("close tool server '%s': %w", s.spec.Name, err)
	}
	return nil
}

// spawn starts a new upstream and initializes it. Callers hold s.mu.
func (s *stdioSource) spawn(ctx context.Context) error {
	if s.sup == nil {
		return fmt.Errorf("tool server '%s': no process supervisor", s.spec.Name)
	}
	if len(s.spec.Command) == 0 || s.spec.Command[0] == "" {
		return fmt.Errorf("tool server '%s': empty command", s.spec.Name)
	}
	env := s.spec.Env
	if env == nil {
		env = process.DefaultEnviron(nil)
	}
	p, err := s.sup.Start(process.Spec{
		Name:     "tools:" + s.spec.Name,
		Path:     s.spec.Command[0],
		Args:     s.spec.Command[1:],
		Dir:      s.spec.Dir,
		Env:      env,
		Stdio:    process.StdioRaw,
		Stderr:   &stderrLog{log: s.log},
		Logger:   s.log,
		Launcher: s.spec.Launcher,
	})
	if err != nil {
		return fmt.Errorf("start tool server '%s': %w", s.spec.Name, err)
	}
	stdin, ok := p.Stdin().(*os.File)
	if !ok {
		p.Stop(context.WithoutCancel(ctx), 0)
		return fmt.Errorf("start tool server '%s': stdin is not a pipe", s.spec.Name)
	}
	c := &stdioConn{p: p}
	c.stdin = &stdinWriter{f: stdin, p: p, timeout: callTimeout(s.spec.CallTimeout), onTimeout: func() {
		c.broken.Store(true)
		s.log.Error("tool server stopped reading its input; killing it", "pid", p.Pid())
		p.Stop(context.Background(), 0)
	}}
	tr := transport.NewIO(p.Stdout(), c.stdin, nil)
	transport.WithCommandLogger(s.log)(tr)
	c.m = newMCPConn(s.spec.Name, tr, s.router, s.log)

	startTimeout := s.spec.StartTimeout
	if startTimeout <= 0 {
		startTimeout = DefaultStartTimeout
	}
	ictx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.m.initialize(ictx); err != nil {
		c.m.close()
		p.Stop(context.WithoutCancel(ctx), 0)
		msg := fmt.Sprintf("start tool server '%s': %v", s.spec.Name, err)
		if errors.Is(ictx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			msg = fmt.Sprintf("start tool server '%s': it did not answer MCP's initialize within %s (a stdio tool server's start-up bound): %v",
				s.spec.Name, startTimeout, err)
		}
		if st, ok := p.ExitStatus(); ok {
			msg += " (" + st.String() + ")"
		}
		if tail := strings.TrimSpace(p.StderrTail()); tail != "" {
			msg += "; stderr tail:\n" + tail
		}
		return errors.New(msg)
	}
	s.cur.Store(c)
	s.log.Debug("tool server started", "pid", p.Pid(), "kill_mode", p.KillMode())
	return nil
}

// stopConn closes the connection (closing the upstream's stdin, which lets
// a well-behaved server exit) and stops its process tree.
func (s *stdioSource) stopConn(ctx context.Context, c *stdioConn) error {
	c.m.close()
	return c.p.Stop(ctx, s.grace())
}

// conn returns the running connection or an ErrNotRunning error.
func (s *stdioSource) conn() (*stdioConn, error) {
	c := s.cur.Load()
	if c == nil {
		return nil, opErr(ErrNotRunning, nil, "tool server '%s' is not running (not started)", s.spec.Name)
	}
	if !c.p.Alive() || c.broken.Load() {
		return nil, s.notRunning(c)
	}
	return c, nil
}

func (s *stdioSource) notRunning(c *stdioConn) error {
	why := "it stopped answering"
	if st, ok := c.p.ExitStatus(); ok {
		why = st.String()
	} else if c.broken.Load() {
		why = "it stopped reading its input"
	}
	return opErr(ErrNotRunning, nil, "tool server '%s' is not running (%s)", s.spec.Name, why)
}

// Tools lists every page of the upstream's tools/list, schemas raw.
func (s *stdioSource) Tools(ctx context.Context) ([]Tool, error) {
	c, err := s.conn()
	if err != nil {
		return nil, err
	}
	cctx, cancel := withTimeout(ctx, callTimeout(s.spec.CallTimeout))
	defer cancel()
	tools, err := c.m.tools(cctx)
	if err != nil {
		return nil, s.callError(ctx, cctx, c, "tools/list", err)
	}
	return tools, nil
}

// Call calls a tool upstream under the source's call timeout.
func (s *stdioSource) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, err := s.conn()
	if err != nil {
		return nil, err
	}
	cctx, cancel := withTimeout(ctx, callTimeout(s.spec.CallTimeout))
	defer cancel()
	res, err := c.m.call(cctx, name, args)
	if err != nil {
		return nil, s.callError(ctx, cctx, c, name, err)
	}
	return res, nil
}

// callError classifies a failed request: the source's timeout, the caller's
// context, a dead upstream, or a protocol error answered by the upstream.
func (s *stdioSource) callError(parent, ctx context.Context, c *stdioConn, what string, err error) error {
	if e := timeoutError(parent, ctx, s.spec.Name, what, callTimeout(s.spec.CallTimeout)); e != nil {
		return e
	}
	if isTransportError(err) || !c.p.Alive() {
		// The connection is gone: most likely the process died. Give the
		// exit a moment to be observed so the error can say how it ended.
		t := time.NewTimer(time.Second)
		select {
		case <-c.p.Exited():
		case <-parent.Done():
		case <-t.C:
		}
		t.Stop()
		return s.notRunning(c)
	}
	return upstreamError(s.spec.Name, what, err)
}
