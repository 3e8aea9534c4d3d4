package episode

import (
	"errors"
	"sync"
)

// Checkpoints is a bounded store of an episode's snapshots by turn (one
// taken after each turn with episode.checkpoints: every_turn; turn 0 is
// the one taken at reset): at most MaxCount of them and MaxBytes of
// Snapshot.Bytes in all. Adding past either bound drops the oldest added
// (a snapshot bigger than MaxBytes by itself is dropped at once). Its
// methods are safe for concurrent use.
type Checkpoints struct {
	// MaxCount and MaxBytes are the bounds (0 or less: none).
	MaxCount int
	MaxBytes int64

	mu     sync.Mutex
	order  []int // turns, oldest added first
	byTurn map[int]*Snapshot
	bytes  int64
	closed bool
}

// NewCheckpoints returns an empty store of at most maxCount snapshots and
// maxBytes bytes (0 or less: unbounded).
func NewCheckpoints(maxCount int, maxBytes int64) *Checkpoints {
	return &Checkpoints{MaxCount: maxCount, MaxBytes: maxBytes, byTurn: map[int]*Snapshot{}}
}

// NewCheckpoints returns the store of the session's configuration
// (episode.checkpoints: every_turn, with episode.max_checkpoints and
// episode.max_checkpoint_bytes), nil when checkpoints are off.
func (e *Env) NewCheckpoints() *Checkpoints {
	c := e.Config.Episode
	if !c.CheckpointsEnabled() {
		return nil
	}
	return NewCheckpoints(c.MaxCheckpoints, int64(c.MaxCheckpointBytes))
}

// Add stores s as the snapshot taken after turn, taking over the handle:
// the store closes it when it drops it (a later Add of the same turn
// replaces it; the bounds drop the oldest; Close drops all). After Close
// it closes s at once.
func (c *Checkpoints) Add(turn int, s *Snapshot) {
	if s == nil {
		return
	}
	c.mu.Lock()
	var drop []*Snapshot
	if c.closed {
		drop = append(drop, s)
	} else {
		if old, ok := c.byTurn[turn]; ok {
			drop = append(drop, c.remove(turn, old))
		}
		c.byTurn[turn] = s
		c.order = append(c.order, turn)
		c.bytes += s.Bytes()
		for len(c.order) > 0 && (c.MaxCount > 0 && len(c.order) > c.MaxCount || c.MaxBytes > 0 && c.bytes > c.MaxBytes) {
			t := c.order[0]
			drop = append(drop, c.remove(t, c.byTurn[t]))
		}
	}
	c.mu.Unlock()
	for _, d := range drop {
		d.Close() // removing a directory of ours; nothing to report to
	}
}

// remove takes turn's snapshot s out of the store (c.mu held) and returns
// it, for closing outside the lock.
func (c *Checkpoints) remove(turn int, s *Snapshot) *Snapshot {
	delete(c.byTurn, turn)
	for i, t := range c.order {
		if t == turn {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.bytes -= s.Bytes()
	return s
}

// At returns a handle of the snapshot taken after turn (turn 0: at reset),
// false when there is none (never taken, or dropped). The handle is the
// caller's own (Retain): close it when done; the store may drop its own
// meanwhile without removing the snapshot under the caller.
func (c *Checkpoints) At(turn int) (*Snapshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.byTurn[turn]
	if !ok {
		return nil, false
	}
	r := s.Retain()
	return r, r != nil
}

// Turns lists the turns held, oldest added first.
func (c *Checkpoints) Turns() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.order...)
}

// Bytes is the sum of the held snapshots' Bytes.
func (c *Checkpoints) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Close drops every snapshot (removing those no At handle holds); later
// Adds close theirs at once. It is idempotent.
func (c *Checkpoints) Close() error {
	c.mu.Lock()
	var drop []*Snapshot
	for _, t := range c.order {
		drop = append(drop, c.byTurn[t])
	}
	c.order, c.byTurn, c.bytes, c.closed = nil, map[int]*Snapshot{}, 0, true
	c.mu.Unlock()
	var errs []error
	for _, s := range drop {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
