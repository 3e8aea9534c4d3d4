package gateway

import (
	"sync"
	"sync/atomic"
)

// policyMu guards every PolicyVersion of the process and policyClock, the
// stamp of their latest Set: sets are rare, reads two per call.
var (
	policyMu    sync.Mutex
	policyClock uint64
)

// policyHistory bounds the sets a PolicyVersion remembers for
// ChangedSince; a call outliving more sets than that is taken to straddle.
const policyHistory = 64

// PolicyVersion is the version of the policy (the weights) a trainer says
// the engine serves, as the trainer sets it: for the whole daemon, or for
// one session (a PolicyVersion whose parent is the daemon's). A session's
// effective version is whichever of its own and its daemon's was set last;
// both start at 0. Every gateway call records the effective version when it
// was sent upstream and when its answer came back; a call during which the
// effective version was ever another than the one it was sent under
// straddles an update (ExportCall.StraddlesUpdate). Setting the version it
// already has changes nothing.
//
// All methods are safe for concurrent use; a nil *PolicyVersion is always
// version 0.
type PolicyVersion struct {
	parent *PolicyVersion

	version int64
	stamp   uint64      // policyClock at the last Set (0: never set)
	hist    []policySet // the latest sets, oldest first
	dropped uint64      // the stamp of the latest set dropped from hist
}

// policySet is one Set: its stamp and version.
type policySet struct {
	stamp   uint64
	version int64
}

// NewPolicyVersion returns a version whose own Set overrides parent's
// until parent is set again (nil parent: a daemon-wide version).
func NewPolicyVersion(parent *PolicyVersion) *PolicyVersion {
	return &PolicyVersion{parent: parent}
}

// Set makes v the version from now on: of the daemon (and so of every
// session under it) for a daemon-wide version, of its session for a
// session's.
func (p *PolicyVersion) Set(v int64) {
	policyMu.Lock()
	defer policyMu.Unlock()
	policyClock++
	p.version, p.stamp = v, policyClock
	if len(p.hist) == policyHistory {
		p.dropped = p.hist[0].stamp
		p.hist = append(p.hist[:0], p.hist[1:]...)
	}
	p.hist = append(p.hist, policySet{policyClock, v})
}

// Version returns the effective version.
func (p *PolicyVersion) Version() int64 {
	v, _ := p.Current()
	return v
}

// Current returns the effective version and the epoch to pass to
// ChangedSince.
func (p *PolicyVersion) Current() (version int64, epoch uint64) {
	if p == nil {
		return 0, 0
	}
	policyMu.Lock()
	defer policyMu.Unlock()
	return p.effective(), policyClock
}

func (p *PolicyVersion) effective() int64 {
	if p.parent != nil && p.parent.stamp > p.stamp {
		return p.parent.version
	}
	return p.version
}

// ChangedSince reports whether the effective version has been anything but
// v since epoch (from Current, which returned v). A Set always makes its
// own value the effective one, so that is whether any Set of p or its
// parent since epoch set another value.
func (p *PolicyVersion) ChangedSince(v int64, epoch uint64) bool {
	if p == nil {
		return false
	}
	policyMu.Lock()
	defer policyMu.Unlock()
	for q := p; q != nil; q = q.parent {
		if q.dropped > epoch {
			return true
		}
		for _, s := range q.hist {
			if s.stamp > epoch && s.version != v {
				return true
			}
		}
	}
	return false
}

// straddlingCalls counts the process's engine calls during which the
// policy version changed (StraddlingCalls).
var straddlingCalls atomic.Uint64

// StraddlingCalls returns how many engine calls of the process's gateways
// were in flight across a policy version change.
func StraddlingCalls() uint64 { return straddlingCalls.Load() }
