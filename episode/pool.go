package episode

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// prepareTimeout bounds the background preparation of one pooled episode
// (the harness's start-up timeout applies within it).
const prepareTimeout = 5 * time.Minute

// Pool keeps episodes prepared ahead of the resets that take them, at one
// readiness level: LevelSandbox (directories and sandbox, no identity: a
// spare) or, with NewAdapter set, LevelDoors with the harness started and
// ready (a standby, held: what its doors see is dropped until taken).
// Preparations run in the background, started by Fill; Take hands the
// oldest over and at once reserves its replacement, whose preparation
// the next Fill starts (or Take itself, when it must wait for the one it
// takes: resets back to back then overlap their waits): a reset arriving
// before then (back to back with the one that took the last) waits for
// that preparation instead of finding the pool empty and starting a cold
// episode beside it. A preparation nobody waits for yet may wait for the
// disk (and the sandbox kept on it) of the episode still closing, however
// long its harness takes to exit; once Take waits for it, for returnWait
// at most (Spec.Needed). The zero value is not usable; use NewPool.
type Pool struct {
	env        *Env
	level      Level
	want       int
	newAdapter func() (harness.Adapter, error)

	mu     sync.Mutex
	items  []*prepared
	closed bool
}

// prepared is one pooled episode, ready once done is closed. Its
// preparation begins once start is closed (Fill).
type prepared struct {
	ep      *Episode // nil when err is set
	err     error
	start   chan struct{}
	started bool // start is closed (under Pool.mu)
	done    chan struct{}
	// needed is closed once a reset waits for the preparation (Take):
	// its wait for a closing episode's disk is bounded from then on
	// (Spec.Needed).
	needed chan struct{}
	cancel context.CancelFunc
}

// NewPool makes a pool keeping want episodes of env prepared to level;
// newAdapter, when set, makes each one's adapter and starts its harness.
func NewPool(env *Env, level Level, want int, newAdapter func() (harness.Adapter, error)) *Pool {
	return &Pool{env: env, level: level, want: want, newAdapter: newAdapter}
}

// Fill starts preparing episodes until want are ready or on the way (the
// reserved ones first). It returns at once.
func (p *Pool) Fill() {
	if p == nil || p.want <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserveLocked()
	p.startLocked()
}

// startLocked starts every preparation not yet started; p.mu is held.
func (p *Pool) startLocked() {
	for _, it := range p.items {
		it.startLocked()
	}
}

// startLocked starts the preparation unless it has started; the pool's
// mu is held.
func (it *prepared) startLocked() {
	if !it.started {
		it.started = true
		close(it.start)
	}
}

// reserveLocked adds not yet started preparations until want are on the
// way; p.mu is held.
func (p *Pool) reserveLocked() {
	for !p.closed && len(p.items) < p.want {
		ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
		it := &prepared{start: make(chan struct{}), done: make(chan struct{}), needed: make(chan struct{}), cancel: cancel}
		p.items = append(p.items, it)
		go func() {
			defer close(it.done)
			defer cancel()
			select {
			case <-it.start:
				it.ep, it.err = p.prepare(ctx, it.needed)
			case <-ctx.Done():
				it.err = ctx.Err()
			}
		}()
	}
}

// prepare opens one episode to the pool's level; needed is closed once a
// reset waits for it.
func (p *Pool) prepare(ctx context.Context, needed <-chan struct{}) (*Episode, error) {
	if p.newAdapter == nil {
		return Open(ctx, Spec{Env: p.env, Held: true, Needed: needed}, p.level)
	}
	a, err := p.newAdapter()
	if err != nil {
		return nil, err
	}
	ep, err := Open(ctx, Spec{Env: p.env, ID: uuid.NewString(), Held: true, Needed: needed}, LevelDoors)
	if err != nil {
		return nil, err
	}
	if err := ep.StartHarness(ctx, a, ep.Launch()); err != nil {
		ep.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("standby harness did not start: %w", err)
	}
	return ep, nil
}

// Take hands over the oldest pooled episode, waiting for its preparation,
// or returns nil when there is none usable: the pool is empty, or the
// episode failed to prepare, or its sandbox or harness ended while it
// waited (it is then closed; Fill replaces it).
func (p *Pool) Take(ctx context.Context) *Episode {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if len(p.items) == 0 {
		p.mu.Unlock()
		return nil
	}
	it := p.items[0]
	p.items = p.items[1:]
	p.reserveLocked() // the replacement: the next Fill starts it
	select {
	case <-it.done:
	default:
		// This reset waits for its episode (reserved by the reset before,
		// whose Fill may not have run yet, or still preparing): a reset
		// right after it would wait too, for a replacement started only
		// once this one replies. Both start now.
		it.startLocked()
		p.startLocked()
		close(it.needed) // Take took it from items: closed once
	}
	p.mu.Unlock()
	select {
	case <-it.done:
	case <-ctx.Done():
		p.drop(it)
		return nil
	}
	log := p.env.Logger
	switch {
	case it.err != nil:
		log.Warn("a prepared episode could not be prepared; starting this one now", "err", it.err)
		return nil
	case it.ep.sandbox != nil && sandboxEnded(it.ep):
		log.Warn("a prepared episode's sandbox ended while waiting; starting this one now")
		p.drop(it)
		return nil
	case it.ep.adapter != nil && !it.ep.adapter.Alive():
		exit, tail, _ := it.ep.adapter.Diagnostics()
		log.Warn("a standby's harness died while waiting; starting a fresh one", "exit", exitText(exit), "stderr_tail", tail)
		p.drop(it)
		return nil
	}
	return it.ep
}

// sandboxEnded reports whether ep's sandbox is gone.
func sandboxEnded(ep *Episode) bool {
	select {
	case <-ep.sandbox.Done():
		return true
	default:
		return false
	}
}

// drop ends a pooled episode's preparation and closes what it made.
func (p *Pool) drop(it *prepared) {
	it.cancel()
	<-it.done
	if it.ep != nil {
		ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
		defer cancel()
		it.ep.Close(ctx)
	}
}

// Close ends every pooled episode; Fill does nothing afterwards.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	all := p.items
	p.items, p.closed = nil, true
	p.mu.Unlock()
	for _, it := range all {
		p.drop(it)
	}
}

// Bind hands a taken episode its event sink and records what its doors
// see from now on.
func (ep *Episode) Bind(onEvent func(wire.Event)) {
	ep.mu.Lock()
	ep.onEvent = onEvent
	ep.mu.Unlock()
	ep.held.Store(false)
}

// teardownTimeout bounds closing an episode nobody waits for.
const teardownTimeout = 30 * time.Second

// exitText is an exit status for a log line.
func exitText(e *process.ExitStatus) string {
	if e == nil {
		return "unknown"
	}
	return e.String()
}
