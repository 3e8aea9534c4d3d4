package sandbox

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// RangeSize is the number of ids mapped per sandbox with IDRange: inside
// 0–65535.
const RangeSize = 65536

// DefaultIDBase is the first host id of DefaultRanges: far above ordinary
// users and the 100000–165535 ranges that /etc/subuid hands out first.
const DefaultIDBase = 1 << 30

// Ranges hands out private host id ranges, one per live sandbox. A daemon
// owns its ranges: two daemons on one host need different bases.
type Ranges struct {
	base  uint32
	slots int
	mu    sync.Mutex
	used  map[int]bool
	next  int
}

// NewRanges returns slots ranges of RangeSize host ids from base.
func NewRanges(base uint32, slots int) (*Ranges, error) {
	if slots <= 0 || uint64(base)+uint64(slots)*RangeSize > 1<<32-1 {
		return nil, fmt.Errorf("%w: %d id ranges from %d do not fit in 32 bits", ErrInvalidConfig, slots, base)
	}
	return &Ranges{base: base, slots: slots, used: map[int]bool{}}, nil
}

// DefaultRanges serves sandboxes whose Config names no IDBase: 4096 ranges
// from DefaultIDBase.
var DefaultRanges, _ = NewRanges(DefaultIDBase, 4096)

// acquire returns the base of a free range.
func (r *Ranges) acquire() (uint32, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < r.slots; i++ {
		s := (r.next + i) % r.slots
		if !r.used[s] {
			r.used[s] = true
			r.next = s + 1
			release := sync.OnceFunc(func() {
				r.mu.Lock()
				delete(r.used, s)
				r.mu.Unlock()
			})
			return r.base + uint32(s)*RangeSize, release, nil
		}
	}
	return 0, nil, fmt.Errorf("all %d sandbox id ranges are in use", r.slots)
}

// idPlan is the id maps of one sandbox and the harness's ids inside.
type idPlan struct {
	mode      IDMode
	hostBase  uint32 // IDRange: host id of inside 0
	uid, gid  int    // the harness's, inside
	setgroups bool
	release   func()
}

// planIDs decides the maps for cfg.
func planIDs(cfg *Config) (idPlan, error) {
	mode := cfg.IDs
	if mode == IDAuto {
		mode = IDSelf
		if os.Geteuid() == 0 {
			mode = IDRange
		}
	}
	p := idPlan{mode: mode, release: func() {}}
	switch mode {
	case IDRange:
		if os.Geteuid() != 0 {
			return p, fmt.Errorf("%w: an id range needs root (the kernel lets others map only their own id)", ErrInvalidConfig)
		}
		if cfg.IDBase != 0 {
			if uint64(cfg.IDBase)+RangeSize > 1<<32-1 {
				return p, fmt.Errorf("%w: id base %d too large", ErrInvalidConfig, cfg.IDBase)
			}
			p.hostBase = cfg.IDBase
		} else {
			rs := cfg.Ranges
			if rs == nil {
				rs = DefaultRanges
			}
			base, release, err := rs.acquire()
			if err != nil {
				return p, err
			}
			p.hostBase, p.release = base, release
		}
		p.uid, p.gid, p.setgroups = 1000, 1000, true
	case IDSelf:
		p.uid, p.gid = 0, 0
	}
	if cfg.UID != nil {
		p.uid = *cfg.UID
	}
	if cfg.GID != nil {
		p.gid = *cfg.GID
	}
	limit := 1
	if mode == IDRange {
		limit = RangeSize
	}
	if p.uid < 0 || p.uid >= limit || p.gid < 0 || p.gid >= limit {
		p.release()
		return p, fmt.Errorf("%w: harness uid %d / gid %d not mapped (ids 0–%d are)", ErrInvalidConfig, p.uid, p.gid, limit-1)
	}
	return p, nil
}

// maps returns the uid and gid maps for SysProcAttr.
func (p idPlan) maps() (uids, gids []syscall.SysProcIDMap) {
	if p.mode == IDRange {
		m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(p.hostBase), Size: RangeSize}}
		return m, m
	}
	return []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		[]syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
}
