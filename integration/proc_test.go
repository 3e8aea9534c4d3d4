package integration

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// proc identifies a process by pid and start time, so that a recycled pid
// is never mistaken for the process a test saw.
type proc struct {
	Pid     int
	Start   uint64 // clock ticks after boot (/proc/PID/stat field 22)
	Cmdline string
}

func (p proc) String() string { return fmt.Sprintf("%d (%s)", p.Pid, p.Cmdline) }

func describe(ps []proc) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// readStat returns a process's state letter and start time.
func readStat(pid int) (state byte, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// comm may contain spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64) // field 22 overall
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], start, true
}

// lookup returns the live process with this pid (zombies are dead).
func lookup(pid int) (proc, bool) {
	state, start, ok := readStat(pid)
	if !ok || state == 'Z' || state == 'X' {
		return proc{}, false
	}
	cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return proc{Pid: pid, Start: start, Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))}, true
}

// mustProc returns the live process with this pid or fails.
func mustProc(t testing.TB, pid int) proc {
	t.Helper()
	p, ok := lookup(pid)
	if !ok {
		t.Fatalf("process %d is not running", pid)
	}
	return p
}

// alive reports whether p (the same incarnation) still runs.
func (p proc) alive() bool {
	state, start, ok := readStat(p.Pid)
	return ok && start == p.Start && state != 'Z' && state != 'X'
}

// waitGone waits until none of ps runs; it fails the test otherwise.
func waitGone(t testing.TB, ps ...proc) {
	t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		var left []proc
		for _, p := range ps {
			if p.alive() {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still alive: %s", describe(left))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReaped waits until p has been reaped by its parent (not merely a
// zombie): only then is its exit visible to the parent's wait.
func waitReaped(t testing.TB, p proc) {
	t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		_, start, ok := readStat(p.Pid)
		if !ok || start != p.Start {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s was not reaped", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// markedProcs lists live processes whose environment carries
// markerVar=marker.
func markedProcs(marker string) []proc {
	want := []byte(markerVar + "=" + marker)
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []proc
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || !hasEnvEntry(env, want) {
			continue
		}
		if p, ok := lookup(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

func hasEnvEntry(environ, entry []byte) bool {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}

// waitNoMarked waits until no process carries the marker and returns what
// is left after timeout.
func waitNoMarked(marker string, timeout time.Duration) []proc {
	deadline := time.Now().Add(timeout)
	for {
		left := markedProcs(marker)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pidAfter parses the pid in a response such as "escaped 1234".
func pidAfter(t testing.TB, text, word string) int {
	t.Helper()
	i := strings.Index(text, word+" ")
	if i < 0 {
		t.Fatalf("no %q in %q", word, text)
	}
	f := strings.Fields(text[i+len(word)+1:])
	if len(f) == 0 {
		t.Fatalf("no pid after %q in %q", word, text)
	}
	pid, err := strconv.Atoi(strings.TrimRight(f[0], ",.;"))
	if err != nil {
		t.Fatalf("bad pid after %q in %q", word, text)
	}
	return pid
}
