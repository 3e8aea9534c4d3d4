package server

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/server/console"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// Surfaces, the values of the surface label of the byte counters.
const (
	surfaceWS      = "ws"
	surfaceHarness = "harness"
	surfaceHTTP    = "http"
	surfaceMCP     = "mcp"
)

// Session kinds, by the surface that created them.
const (
	kindWS      = "ws"
	kindHTTP    = "http"
	kindHarness = "harness"
	kindMCP     = "mcp"
)

// managed is one session under the server's care.
type managed struct {
	id       string
	kind     string
	sess     *session.Session
	created  time.Time
	attached atomic.Bool  // a socket is open on it
	active   atomic.Int64 // unix nanos of the last activity
	steps    atomic.Int64
	closing  atomic.Bool  // an HTTP close was requested while attached
	ops      atomic.Int32 // resets and steps running through the server
	// forkedFrom is where a fork's sibling came from (nil otherwise);
	// registered says sess and forkedFrom are set (a sibling's session
	// reports events before the server has registered it: fork.go).
	forkedFrom *wire.ForkOrigin
	registered atomic.Bool
}

// view is m as the console sees it.
func (m *managed) view() console.Session {
	return console.Session{ID: m.id, Kind: m.kind, Created: m.created, Session: m.sess, ForkedFrom: m.forkedFrom}
}

func (m *managed) touch() { m.active.Store(time.Now().UnixNano()) }

func (m *managed) idleFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, m.active.Load()))
}

// CapacityError reports that no session slot is free.
type CapacityError struct {
	Active, Max int
	// Idle is the idle timeout of sessions no socket holds (0: none).
	Idle time.Duration
	// Want is how many slots were asked for at once (a fork of Want
	// siblings; 0 or 1: one session).
	Want int
}

func (e *CapacityError) Error() string {
	if e.Want > 1 {
		return fmt.Sprintf("Server at capacity: a fork of %d siblings needs %d free session slots, and %d of %d are in use; no sibling was made. "+
			"Close sessions (POST /close with their session_id, or a close frame), fork fewer, or raise --max-sessions.", e.Want, e.Want, e.Active, e.Max)
	}
	wait := "set --idle-timeout so that abandoned HTTP sessions are ended"
	if e.Idle > 0 {
		wait = fmt.Sprintf("wait for an abandoned HTTP session's idle timeout (%s)", e.Idle)
	}
	return fmt.Sprintf("Server at capacity: %d/%d sessions active. Cannot accept new connections. "+
		"To free a slot: close a session (WebSocket close frame, POST /close with its session_id), %s, "+
		"or raise --max-sessions.", e.Active, e.Max, wait)
}

// registry holds sessions and enforces capacity. A slot is reserved before
// the session is built, so capacity is never exceeded during creation.
type registry struct {
	max         int
	idleTimeout time.Duration // for CapacityError

	mu       sync.Mutex
	sessions map[string]*managed
	reserved int
	draining bool
	forks    []console.Fork // which sibling was forked from which episode (fork.go)
}

func newRegistry(max int, idle time.Duration) *registry {
	return &registry{max: max, idleTimeout: idle, sessions: map[string]*managed{}}
}

// errDraining is returned when the server is shutting down.
var errDraining = fmt.Errorf("server is shutting down")

// reserve claims a slot; release returns it if the session is never added.
func (r *registry) reserve() (release func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draining {
		return nil, errDraining
	}
	if n := len(r.sessions) + r.reserved; n >= r.max {
		return nil, &CapacityError{Active: n, Max: r.max, Idle: r.idleTimeout}
	}
	r.reserved++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.reserved--
			r.mu.Unlock()
		})
	}, nil
}

// add turns a reservation into a registered session.
func (r *registry) add(m *managed, release func()) {
	r.mu.Lock()
	r.sessions[m.id] = m
	r.mu.Unlock()
	release()
}

func (r *registry) get(id string) *managed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// remove unregisters and returns the session, if present.
func (r *registry) remove(id string) *managed {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.sessions[id]
	delete(r.sessions, id)
	return m
}

// list returns the sessions, oldest first.
func (r *registry) list() []*managed {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*managed, 0, len(r.sessions))
	for _, m := range r.sessions {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

// count returns active sessions plus reservations.
func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions) + r.reserved
}

// refuse makes every later reservation fail with errDraining.
func (r *registry) refuse() {
	r.mu.Lock()
	r.draining = true
	r.mu.Unlock()
}

// drain refuses new reservations and returns every session.
func (r *registry) drain() []*managed {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draining = true
	out := make([]*managed, 0, len(r.sessions))
	for _, m := range r.sessions {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

// idle returns sessions idle for longer than d that no socket holds and no
// turn is running on.
func (r *registry) idle(d time.Duration) []*managed {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*managed
	for _, m := range r.sessions {
		if !m.attached.Load() && !m.sess.Busy() && m.idleFor(now) > d {
			out = append(out, m)
		}
	}
	return out
}

// create reserves a slot and builds a session; the caller must destroy it.
func (s *Server) create(kind string) (*managed, error) {
	release, err := s.reg.reserve()
	if err != nil {
		return nil, err
	}
	defer release()
	id := uuid.NewString()
	m := &managed{id: id, kind: kind, created: time.Now()}
	sess, err := s.newSession(id, s.observerFor(m))
	if err != nil {
		return nil, &factoryError{err: err}
	}
	m.sess = sess
	m.touch()
	s.reg.add(m, release)
	s.metrics.SessionOpened(kind)
	s.console.Opened(m.view())
	s.log.Info("session created", "session_id", id, "kind", kind, "active", s.reg.count(), "max", s.reg.max)
	return m, nil
}

// destroy closes a session and frees its slot.
func (s *Server) destroy(m *managed, why string) {
	if finish := s.detach(m); finish != nil {
		finish(why)
	}
}

// detach frees m's slot at once (it stops counting against max_sessions)
// and returns what ends the session, which may take as long as stopping
// its harness; nil when m was already destroyed. Between the two the
// session is among the closing ones, so that an export asked for in
// between waits for the file its close writes instead of finding the
// episode in neither place (a 409).
func (s *Server) detach(m *managed) (finish func(why string)) {
	if _, already := s.closing.LoadOrStore(m.id, m); already {
		return nil
	}
	if s.reg.remove(m.id) == nil {
		s.closing.Delete(m.id)
		return nil
	}
	return func(why string) {
		defer s.closing.Delete(m.id)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.sess.Close(ctx); err != nil {
			s.log.Warn("session close", "session_id", m.id, "err", err)
		}
		s.metrics.SessionClosed(m.kind)
		s.console.Closed(m.id)
		s.log.Info("session ended", "session_id", m.id, "kind", m.kind, "why", why, "steps", m.steps.Load())
	}
}

// factoryError reports that an environment could not be built.
type factoryError struct{ err error }

func (e *factoryError) Error() string { return e.err.Error() }
func (e *factoryError) Unwrap() error { return e.err }

// reapLoop destroys idle sessions until ctx ends.
func (s *Server) reapLoop(ctx context.Context, timeout time.Duration) {
	every := max(timeout/4, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, m := range s.reg.idle(timeout) {
				// Re-check just before destroying: a socket may have attached.
				if m.attached.Load() || m.sess.Busy() {
					continue
				}
				s.destroy(m, fmt.Sprintf("idle for more than %s", timeout))
			}
		}
	}
}

// drainPeek returns the sessions without draining (tests).
func (r *registry) drainPeek() []*managed {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*managed, 0, len(r.sessions))
	for _, m := range r.sessions {
		out = append(out, m)
	}
	return out
}
