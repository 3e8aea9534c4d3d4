package episode

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Resource names what an episode opened, for Env.Trace and errors.
type Resource string

// The resources an episode opens, in the order Open opens them.
const (
	ResourceDirectories Resource = "directories"
	ResourceDisk        Resource = "disk" // the directories' quota (limits.disk)
	ResourceSandbox     Resource = "sandbox"
	// ResourceToolSandbox is a configured per-episode tool server's side
	// sandbox, started with the episode's own (tools.go).
	ResourceToolSandbox Resource = "tool-sandbox"
	ResourceToolSources Resource = "tool-sources"
	ResourceBridge      Resource = "bridge"
	ResourceGateway     Resource = "gateway"
	ResourceEgress      Resource = "egress"
	ResourceHarness     Resource = "harness"
)

// TraceOp is what happened to a resource.
type TraceOp string

// Trace operations.
const (
	TraceOpened TraceOp = "opened"
	TraceClosed TraceOp = "closed"
)

// TraceEvent reports one resource of one episode opened or closed.
type TraceEvent struct {
	// Dir is the episode's directory: unique among the session's live
	// episodes from the episode's first stage on (a prepared episode gets
	// its id later); with a disk quota a later episode may get the same
	// one, emptied, once this one has closed (disk.go).
	Dir string
	// Episode is the episode's id when the event happened ("" for a
	// prepared episode not taken yet).
	Episode  string
	Resource Resource
	Op       TraceOp
}

// closer is one undo of the stack.
type closer struct {
	res Resource
	fn  func(context.Context) error
	ran bool
}

// closers is an episode's stack of undos: each stage of Open pushes its
// own, and they run once each, last pushed first.
type closers struct {
	mu     sync.Mutex
	stack  []*closer
	trace  func(Resource, TraceOp)
	failed bool // an undo returned an error
}

// push adds the undo of res; trace reports it opened.
func (c *closers) push(res Resource, fn func(context.Context) error) {
	c.mu.Lock()
	c.stack = append(c.stack, &closer{res: res, fn: fn})
	c.mu.Unlock()
	if c.trace != nil {
		c.trace(res, TraceOpened)
	}
}

// runDownTo runs every undo not yet run above the first keep entries, last
// pushed first, and joins their errors. A later call runs only what is
// left: no undo runs twice.
func (c *closers) runDownTo(ctx context.Context, keep int) error {
	var errs []error
	for {
		cl := c.pop(keep)
		if cl == nil {
			return errors.Join(errs...)
		}
		if err := cl.fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", cl.res, err))
			c.mu.Lock()
			c.failed = true
			c.mu.Unlock()
		}
		if c.trace != nil {
			c.trace(cl.res, TraceClosed)
		}
	}
}

// pop takes the topmost undo above keep that has not run, marking it run.
func (c *closers) pop(keep int) *closer {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.stack) - 1; i >= keep && i >= 0; i-- {
		if cl := c.stack[i]; !cl.ran {
			cl.ran = true
			return cl
		}
	}
	return nil
}

// anyFailed reports whether an undo that ran returned an error.
func (c *closers) anyFailed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// size is how many undos were pushed.
func (c *closers) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stack)
}
