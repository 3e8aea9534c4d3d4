package agents_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/process"
)

// proc is one process as /proc shows it; pid and start time identify it
// across pid reuse.
type proc struct {
	pid, ppid int
	start     uint64 // start time in clock ticks since boot
	state     byte
	cmd       string
}

func (p proc) String() string { return fmt.Sprintf("%d(%s)", p.pid, p.cmd) }

// readProc reads /proc/PID/stat and cmdline; ok is false when the process
// is gone.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid ... ; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.cmd = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	if len(p.cmd) > 100 {
		p.cmd = p.cmd[:100] + "…"
	}
	return p, true
}

// allProcs lists every live process.
func allProcs() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// treeMarker returns the HARNESSD_TREE value in a process's environment.
func treeMarker(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(process.TreeEnvVar+"=")); ok {
			return string(v)
		}
	}
	return ""
}

// sandboxSpawner is in the command line of the daemon's sandbox spawner.
const sandboxSpawner = "__sandbox-spawner"

// agentTree collects the agent's whole process tree under the harnessd
// process daemon: every child of the daemon that is not the tool server
// (testharness tools) or the sandbox spawner (whose children count), their
// descendants, and every process carrying one of their HARNESSD_TREE
// markers (descendants that left the tree).
func agentTree(t *testing.T, daemon int, toolServer string) []proc {
	t.Helper()
	all := allProcs()
	kids := map[int][]proc{}
	for _, p := range all {
		kids[p.ppid] = append(kids[p.ppid], p)
	}
	in := map[int]proc{}
	markers := map[string]bool{}
	var queue []proc
	children := kids[daemon]
	for i := 0; i < len(children); i++ {
		c := children[i]
		if strings.Contains(c.cmd, toolServer) || c.state == 'Z' {
			continue
		}
		if strings.Contains(c.cmd, sandboxSpawner) {
			// The daemon's own, for its whole life: its children (the
			// sandboxes' inits) are the agent's.
			children = append(children, kids[c.pid]...)
			continue
		}
		queue = append(queue, c)
		if m := treeMarker(c.pid); m != "" {
			markers[m] = true
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if _, seen := in[p.pid]; seen {
			continue
		}
		in[p.pid] = p
		queue = append(queue, kids[p.pid]...)
	}
	for _, p := range all {
		if _, seen := in[p.pid]; !seen && p.state != 'Z' && markers[treeMarker(p.pid)] {
			in[p.pid] = p
		}
	}
	out := make([]proc, 0, len(in))
	for _, p := range in {
		out = append(out, p)
	}
	return out
}

// alive returns the processes of tree that still run (a zombie has ended;
// a reused pid is another process).
func alive(tree []proc) []proc {
	var out []proc
	for _, p := range tree {
		if q, ok := readProc(p.pid); ok && q.start == p.start && q.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// waitGone polls until every process of tree has ended, for at most d.
func waitGone(t *testing.T, what string, tree []proc, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := alive(tree)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %d of %d processes of the agent's tree still run after %s: %v", what, len(left), len(tree), d, left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exeBase is the base name of a command line's program, for reports.
func exeBase(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return "?"
	}
	return filepath.Base(f[0])
}
