package process

import "github.com/harnessd/harnessd/process/internal/cgtree"

// CgroupInfo describes the cgroup v2 setup a Supervisor would use, as found
// by ProbeCgroup.
type CgroupInfo = cgtree.Info

// ProbeCgroup finds the cgroup v2 directory a Supervisor would use (root, or
// this process's own cgroup when root is empty) and tests that a directory
// can be made there and has cgroup.kill. The scratch directory it makes is
// removed before it returns; it never panics.
func ProbeCgroup(root string) CgroupInfo { return cgtree.Probe(root) }
