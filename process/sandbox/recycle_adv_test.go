package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/process/sandbox"
)

// Red-team tests of Recycle (issue 28): each plants a trace as one
// tenant and looks for it as the next. Every one has its positive
// control: the trace is seen by a later run of the same sandbox when no
// Recycle came between (or the attack is shown to work where it should),
// so that none passes by not running. The holes the red team found are
// closed; a test whose doc comment says RESIDUAL checks a counter the
// recycle keeps by design, as docs/security.md says it does.

// recycleModes are the agent's modes for these tests (runAgent's default
// case looks here).
var recycleModes = map[string]func(args []string) result{
	"tmpino":    func([]string) result { return newInodes() },
	"mkfiles":   func(a []string) result { return churnFiles(atoi(a, 0)) },
	"ipcid":     func([]string) result { return newIPCIds() },
	"ipcchurn":  func(a []string) result { return churnIPC(atoi(a, 0)) },
	"netcount":  func([]string) result { return netCounters() },
	"netchurn":  func(a []string) result { return churnNet(atoi(a, 0)) },
	"initstat":  func([]string) result { return initAccounting() },
	"faults":    func(a []string) result { return touchPages(atoi(a, 0)) },
	"dirmeta":   func([]string) result { return scratchMeta() },
	"dirstamp":  func(a []string) result { return stampScratch(a) },
	"writables": func(a []string) result { return writableMounts() },
	"nsstate":   func([]string) result { return changeNamespaceState() },
	"sysctlset": func(a []string) result { return outcome(os.WriteFile(a[0], []byte(a[1]), 0)) },
	"escapees":  func([]string) result { return leaveEscapees() },
	"hardlinks": func(a []string) result { return hardLinks(atoi(a, 0)) },
	"unixcycle": func(a []string) result { return unixCycle(a[0]) },
	"unixreach": func(a []string) result { return unixReach(a[0]) },
	"unixbind": func(a []string) result {
		l, err := net.Listen("unix", "@"+a[0])
		if err == nil {
			l.Close()
		}
		return outcome(err)
	},
	"stuck": func(a []string) result { return stuckConnection(a[0], a[1]) },
	"count": func(a []string) result {
		ents, err := os.ReadDir(a[0])
		r := outcome(err)
		r.N = len(ents)
		return r
	},
}

func atoi(a []string, i int) int {
	if i >= len(a) {
		return 0
	}
	n, _ := strconv.Atoi(a[i])
	return n
}

// scratchDirs are the sandbox's own writable file systems.
var scratchDirs = []string{"/tmp", "/dev/shm"}

// newInodes makes one file in each scratch directory and removes it: List
// is "dir=inode" for each (the file system's next inode number).
func newInodes() result {
	r := result{OK: true}
	for _, d := range scratchDirs {
		p := filepath.Join(d, "probe-ino")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return outcome(err)
		}
		var st unix.Stat_t
		err := unix.Stat(p, &st)
		os.Remove(p)
		if err != nil {
			return outcome(err)
		}
		r.List = append(r.List, fmt.Sprintf("%s=%d", d, st.Ino))
	}
	return r
}

// churnFiles makes and removes n files in each scratch directory: it
// leaves none for the recycle to find.
func churnFiles(n int) result {
	for _, d := range scratchDirs {
		for i := 0; i < n; i++ {
			p := filepath.Join(d, "churn-"+strconv.Itoa(i))
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				return outcome(err)
			}
			if err := os.Remove(p); err != nil {
				return outcome(err)
			}
		}
	}
	return result{OK: true, N: n}
}

// sysvGet makes one System V object of kind (shm, sem, msg).
func sysvGet(kind string) (int, error) {
	var nr uintptr
	a := [3]uintptr{unix.IPC_PRIVATE, 0, unix.IPC_CREAT | 0o600}
	switch kind {
	case "shm":
		nr, a[1] = unix.SYS_SHMGET, 4096
	case "sem":
		nr, a[1] = unix.SYS_SEMGET, 1
	case "msg":
		nr, a[1], a[2] = unix.SYS_MSGGET, unix.IPC_CREAT|0o600, 0
	}
	id, _, e := unix.Syscall(nr, a[0], a[1], a[2])
	if e != 0 {
		return -1, e
	}
	return int(id), nil
}

// sysvRemove removes the System V object id of kind.
func sysvRemove(kind string, id int) error {
	var e unix.Errno
	switch kind {
	case "shm":
		_, _, e = unix.Syscall(unix.SYS_SHMCTL, uintptr(id), unix.IPC_RMID, 0)
	case "sem":
		_, _, e = unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0)
	case "msg":
		_, _, e = unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)
	}
	return errOf(e)
}

var sysvKinds = []string{"shm", "sem", "msg"}

// newIPCIds makes one System V object of each kind and removes it again:
// List is "kind=id" for each.
func newIPCIds() result {
	r := result{OK: true}
	for _, k := range sysvKinds {
		id, err := sysvGet(k)
		if err != nil {
			return outcome(err)
		}
		if err := sysvRemove(k, id); err != nil {
			return outcome(err)
		}
		r.List = append(r.List, fmt.Sprintf("%s=%d", k, id))
	}
	return r
}

// churnIPC makes and removes n System V objects of each kind: it leaves
// none for the recycle to find.
func churnIPC(n int) result {
	for _, k := range sysvKinds {
		for i := 0; i < n; i++ {
			id, err := sysvGet(k)
			if err != nil {
				return outcome(err)
			}
			if err := sysvRemove(k, id); err != nil {
				return outcome(err)
			}
		}
	}
	return result{OK: true, N: n}
}

// netCounters reads the network namespace's own counters: the loopback's
// received packets (/proc/net/dev) and TCP's active opens and UDP's sent
// datagrams (/proc/net/snmp). List is "name=value" for each.
func netCounters() result {
	r := result{OK: true}
	dev, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		return outcome(err)
	}
	for _, l := range strings.Split(string(dev), "\n") {
		name, rest, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(name) == "lo" {
			f := strings.Fields(rest)
			r.List = append(r.List, "lo.rx_packets="+f[1])
		}
	}
	snmp, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return outcome(err)
	}
	lines := strings.Split(string(snmp), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		head, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j := 1; j < len(head) && j < len(vals); j++ {
			switch head[0] + head[j] {
			case "Tcp:ActiveOpens", "Udp:OutDatagrams":
				r.List = append(r.List, head[0]+head[j]+"="+vals[j])
			}
		}
	}
	return r
}

// churnNet makes n loopback TCP connections (one byte each way) and
// sends n UDP datagrams to itself; every socket is closed again.
func churnNet(n int) result {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return outcome(err)
	}
	defer ln.Close()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return outcome(err)
		}
		s, err := ln.Accept()
		if err != nil {
			return outcome(err)
		}
		b := []byte{1}
		c.Write(b)
		s.Read(b)
		s.Close()
		c.Close()
	}
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return outcome(err)
	}
	defer u.Close()
	for i := 0; i < n; i++ {
		if _, err := u.WriteTo([]byte{1}, u.LocalAddr()); err != nil {
			return outcome(err)
		}
	}
	return result{OK: true, N: n}
}

// initAccounting reads what /proc/1/stat tells of the init's reaped
// children: List is "cminflt=…", "cmajflt=…", "cutime=…", "cstime=…".
func initAccounting() result {
	b, err := os.ReadFile("/proc/1/stat")
	if err != nil {
		return outcome(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the command: state is field 3, cminflt 11, cmajflt 13,
	// cutime 16, cstime 17.
	r := result{OK: true}
	for name, field := range map[string]int{"cminflt": 11, "cmajflt": 13, "cutime": 16, "cstime": 17} {
		r.List = append(r.List, name+"="+f[field-3])
	}
	return r
}

// touchPages maps n anonymous pages, writes to each (n minor faults) and
// unmaps them. n is at most 4096 (16 MiB).
func touchPages(n int) result {
	n = min(n, 4096)
	page := os.Getpagesize()
	m, err := unix.Mmap(-1, 0, n*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return outcome(err)
	}
	for i := 0; i < n; i++ {
		m[i*page] = 1
	}
	return result{OK: unix.Munmap(m) == nil, N: n}
}

// scratchMeta is what each scratch directory itself shows: List is
// "dir mode=… uid=… mtime=… atime=… xattrs=…".
func scratchMeta() result {
	r := result{OK: true}
	for _, d := range scratchDirs {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return outcome(err)
		}
		buf := make([]byte, 4096)
		n, _ := unix.Listxattr(d, buf)
		r.List = append(r.List, fmt.Sprintf("%s mode=%o uid=%d mtime=%d.%09d atime=%d.%09d xattrs=%q",
			d, st.Mode, st.Uid, st.Mtim.Sec, st.Mtim.Nsec, st.Atim.Sec, st.Atim.Nsec, buf[:max(n, 0)]))
	}
	return r
}

// stampPayload is what stampScratch writes into each scratch directory's
// times: 64 bits of the tenant's choosing.
const stampPayload = 4102444800 // 2100-01-01

// stampScratch tries to leave the marks named in marks on each scratch
// directory itself (not in it): "times" set to stampPayload, a user
// extended attribute ("xattr"), its "mode" changed. List names each try
// that succeeded.
func stampScratch(marks []string) result {
	r := result{OK: true}
	for _, d := range scratchDirs {
		for _, m := range marks {
			var err error
			switch m {
			case "times":
				ts := []unix.Timespec{{Sec: stampPayload, Nsec: 424242}, {Sec: stampPayload, Nsec: 424242}}
				err = unix.UtimesNanoAt(unix.AT_FDCWD, d, ts, 0)
			case "xattr":
				err = unix.Setxattr(d, "user.left-by", []byte("tenant A"), 0)
			case "mode":
				err = os.Chmod(d, 0o1770)
			}
			if err == nil {
				r.List = append(r.List, d+" "+m)
			}
		}
	}
	return r
}

// writableMounts lists each mount point of /proc/self/mountinfo that this
// process can make a file in (made and removed again), with "fstype".
func writableMounts() result {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return outcome(err)
	}
	r := result{OK: true}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		mp := f[4]
		fstype := ""
		for i, x := range f {
			if x == "-" && i+1 < len(f) {
				fstype = f[i+1]
			}
		}
		fi, err := os.Stat(mp)
		if err != nil || !fi.IsDir() {
			continue
		}
		p := filepath.Join(mp, ".recycle-probe")
		if err := os.WriteFile(p, nil, 0o600); err == nil {
			os.Remove(p)
			r.List = append(r.List, mp+" "+fstype)
		} else if err := unix.Mkfifo(p, 0o600); err == nil {
			os.Remove(p)
			r.List = append(r.List, mp+" "+fstype+" (fifo)")
		}
	}
	return r
}

// listMap turns List's "key=value" entries into a map.
func listMap(list []string) map[string]int64 {
	m := map[string]int64{}
	for _, s := range list {
		k, v, _ := strings.Cut(s, "=")
		n, _ := strconv.ParseInt(v, 10, 64)
		m[k] = n
	}
	return m
}

// recycleCfg is the configuration of these tests' sandboxes: seccomp on,
// no doors (their traffic would move the counters).
func recycleCfg(t *testing.T) sandbox.Config {
	cfg := baseConfig(t)
	cfg.Seccomp = true
	return cfg
}

// firstLook is what mode shows as the first run of a new sandbox of cfg.
func firstLook(t *testing.T, cfg sandbox.Config, mode ...string) result {
	t.Helper()
	ctx, sb := openSandbox(t, cfg)
	r, _ := runAgain(t, ctx, sb, nil, mode...)
	if !r.OK {
		t.Fatalf("%v in a new sandbox: %+v", mode, r)
	}
	return r
}

// plantAndLook runs plant in a new sandbox of cfg, then look twice: once
// without a recycle (the positive control) and once after one. It
// returns both looks.
func plantAndLook(t *testing.T, cfg sandbox.Config, plant, look []string) (kept, after result) {
	t.Helper()
	ctx, sb := openSandbox(t, cfg)
	return plantAndLookIn(t, ctx, sb, plant, look)
}

func plantAndLookIn(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, plant, look []string) (kept, after result) {
	t.Helper()
	if r, _ := runAgain(t, ctx, sb, nil, plant...); !r.OK {
		t.Fatalf("plant %v: %+v", plant, r)
	}
	kept, _ = runAgain(t, ctx, sb, nil, look...)
	if r, _ := runAgain(t, ctx, sb, nil, plant...); !r.OK {
		t.Fatalf("plant %v again: %+v", plant, r)
	}
	if err := sb.Recycle(ctx); err != nil {
		t.Fatalf("recycle: %v", err)
	}
	after, _ = runAgain(t, ctx, sb, nil, look...)
	if !kept.OK || !after.OK {
		t.Fatalf("look %v: %+v, %+v", look, kept, after)
	}
	return kept, after
}

// TestRecycleHidesTheScratchInodeCounter: a tenant that makes and removes
// files in /tmp and /dev/shm leaves nothing there, but a tmpfs numbers
// its inodes from a counter of its own that only goes up: the next
// tenant's first file's inode number says how many files the last one
// made (a channel of any width between them).
//
// A recycle mounts a new /tmp and /dev/shm (no mount below them), whose
// inode numbers start again.
func TestRecycleHidesTheScratchInodeCounter(t *testing.T) {
	need(t)
	cfg := recycleCfg(t)
	fresh := listMap(firstLook(t, cfg, "tmpino").List)
	kept, after := plantAndLook(t, cfg, []string{"mkfiles", "100"}, []string{"tmpino"})
	for _, d := range scratchDirs {
		k, a := listMap(kept.List)[d], listMap(after.List)[d]
		if k < fresh[d]+100 {
			t.Errorf("%s: without a recycle the next run's inode is %d, a new sandbox's %d: the churn or the look is broken", d, k, fresh[d])
		}
		if a != fresh[d] {
			t.Errorf("%s: after a recycle the next run's first inode is %d, a new sandbox's %d: it counts the last tenant's files", d, a, fresh[d])
		}
	}
}

// TestRecycleKeepsTheSysVIdSequence: a tenant that makes and removes
// System V objects leaves none, but the IPC namespace numbers them with a
// sequence per kind that only goes up: the next tenant's first object's
// id says how many the last one made.
//
// RESIDUAL, documented (docs/security.md): ipcns.ClearSysV removes the
// objects, not the sequence. The test checks the documentation's claim:
// the positive control (without a recycle) and the carried-over sequence
// after one; it fails, to update the documentation, once that changes.
func TestRecycleKeepsTheSysVIdSequence(t *testing.T) {
	need(t)
	cfg := recycleCfg(t)
	fresh := listMap(firstLook(t, cfg, "ipcid").List)
	kept, after := plantAndLook(t, cfg, []string{"ipcchurn", "5"}, []string{"ipcid"})
	for _, k := range sysvKinds {
		if listMap(kept.List)[k] == fresh[k] {
			t.Errorf("%s: without a recycle the next run's id is %d, a new sandbox's too: the churn or the look is broken", k, fresh[k])
		}
		if a := listMap(after.List)[k]; a == fresh[k] {
			t.Errorf("%s: after a recycle the next run's first id is a new sandbox's (%d): the sequence no longer carries over; docs/security.md says it does", k, a)
		}
	}
}

// TestRecycleKeepsTheNetworkCounters: the sandbox's network namespace
// counts every packet and connection its tenants made (/proc/net/dev,
// /proc/net/snmp, /proc/net/netstat, all readable inside); a tenant's
// loopback traffic is there for the next one to read, and to decode (the
// counts are the tenant's to choose).
//
// RESIDUAL, documented (docs/security.md): the sweep ends the sockets,
// not the counters, which a kept network namespace cannot have reset.
// The test checks the documentation's claim, as the one above.
func TestRecycleKeepsTheNetworkCounters(t *testing.T) {
	need(t)
	cfg := recycleCfg(t)
	fresh := listMap(firstLook(t, cfg, "netcount").List)
	kept, after := plantAndLook(t, cfg, []string{"netchurn", "7"}, []string{"netcount"})
	for _, k := range []string{"lo.rx_packets", "Tcp:ActiveOpens", "Udp:OutDatagrams"} {
		if listMap(kept.List)[k] < fresh[k]+7 {
			t.Errorf("%s: without a recycle the next run reads %d, a new sandbox %d: the churn or the look is broken", k, listMap(kept.List)[k], fresh[k])
		}
		if a := listMap(after.List)[k]; a < fresh[k]+7 {
			t.Errorf("%s: after a recycle the next run reads %d, a new sandbox %d: the counters no longer carry over; docs/security.md says they do", k, a, fresh[k])
		}
	}
}

// TestRecycleKeepsTheInitsChildAccounting: the init reaps every process
// of every tenant, and the kernel adds each one's page faults and CPU
// time to the init's counts of its reaped children, which /proc/1/stat
// shows any process of the namespace: a tenant that touched n pages is
// read there by the next one (n of its choosing).
//
// RESIDUAL, documented (docs/security.md): the init outlives its tenants
// and its children's accounting cannot be reset. The test checks the
// documentation's claim, as the ones above.
func TestRecycleKeepsTheInitsChildAccounting(t *testing.T) {
	need(t)
	cfg := recycleCfg(t)
	fresh := listMap(firstLook(t, cfg, "initstat").List)
	kept, after := plantAndLook(t, cfg, []string{"faults", "3000"}, []string{"initstat"})
	if k := listMap(kept.List)["cminflt"]; k < fresh["cminflt"]+3000 {
		t.Errorf("without a recycle the next run reads cminflt %d, a new sandbox %d: the faults or the look is broken", k, fresh["cminflt"])
	}
	if a := listMap(after.List); a["cminflt"] < fresh["cminflt"]+3000 {
		t.Errorf("after a recycle the next run reads the init's reaped children's faults %d, a new sandbox %d: the accounting no longer carries over; docs/security.md says it does",
			a["cminflt"], fresh["cminflt"])
	}
}

// TestRecycleRestoresTheScratchDirsThemselves: the recycle empties /tmp
// and /dev/shm, but each directory itself keeps what its last tenant did
// to it: its modification time moves with every file made or removed in
// it (when, to the nanosecond, the tenant's last one was), and with the
// single id map (IDSelf) the harness is uid 0 inside, the owner of both
// directories, and may set their times to 64 bits of its choosing, give
// them a user extended attribute or change their mode.
//
// With IDRange the recycle mounts both afresh; a sandbox with IDSelf is
// never recycled.
func TestRecycleRestoresTheScratchDirsThemselves(t *testing.T) {
	need(t)
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			cfg := recycleCfg(t)
			cfg.IDs = ids
			ctx, sb := openSandbox(t, cfg)
			setup, _ := runAgain(t, ctx, sb, nil, "dirmeta")
			stamp, _ := runAgain(t, ctx, sb, nil, "dirstamp", "times", "mode")
			if ids == sandbox.IDSelf && len(stamp.List) == 0 {
				t.Errorf("as uid 0 inside, the owner, the harness marked neither scratch directory: the stamp is broken (%+v)", stamp)
			}
			if ids == sandbox.IDRange && len(stamp.List) != 0 {
				t.Errorf("as uid 1000 the harness marked the scratch directories: %v", stamp.List)
			}
			if r, _ := runAgain(t, ctx, sb, nil, "mkfiles", "1"); !r.OK {
				t.Fatalf("mkfiles: %+v", r)
			}
			kept, _ := runAgain(t, ctx, sb, nil, "dirmeta")
			for i := range scratchDirs {
				if kept.List[i] == setup.List[i] {
					t.Errorf("without a recycle the next run finds %q as at setup: the marks are broken", kept.List[i])
				}
			}
			// The times and the mode again (an extended attribute on a
			// tmpfs is charged as an inode: the recycle's usage check
			// catches it, TestRecycleFailsOnAnExtendedAttributeOfAScratchDir).
			if r, _ := runAgain(t, ctx, sb, nil, "dirstamp", "times", "mode"); ids == sandbox.IDSelf && len(r.List) == 0 {
				t.Fatalf("dirstamp again: %+v", r)
			}
			err := sb.Recycle(ctx)
			if ids == sandbox.IDSelf {
				if err == nil {
					t.Fatal("a sandbox with the single id map, whose harness owns its scratch directories, was recycled")
				}
				return
			}
			if err != nil {
				t.Fatalf("recycle: %v", err)
			}
			after, _ := runAgain(t, ctx, sb, nil, "dirmeta")
			for i := range scratchDirs {
				if after.List[i] != setup.List[i] {
					t.Errorf("after a recycle the next run finds %q, at setup it was %q", after.List[i], setup.List[i])
				}
			}
		})
	}
}

// TestRecycleScratchDirsAreTheOnlyWritableMounts: the recycle empties
// /tmp and /dev/shm (and the daemon the binds): a tenant must have no
// other mount to leave a file in. The harness tries to make a file, then
// a FIFO, at every mount point of its mount table; /tmp and /dev/shm
// take one (the positive control of the look).
func TestRecycleScratchDirsAreTheOnlyWritableMounts(t *testing.T) {
	need(t)
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			cfg := recycleCfg(t)
			cfg.IDs = ids
			r := firstLook(t, cfg, "writables")
			want := map[string]bool{"/tmp tmpfs": true, "/dev/shm tmpfs": true}
			for _, w := range r.List {
				if !want[w] {
					t.Errorf("the harness can leave a file on %s, which no recycle empties", w)
				}
				delete(want, w)
			}
			if len(want) != 0 {
				t.Errorf("the harness cannot write to %v (found %v): the look is broken", want, r.List)
			}
		})
	}
}

// TestRecycleFailsOnAnExtendedAttributeOfAScratchDir: with the single id
// map the harness owns /tmp and /dev/shm and may give them a user
// extended attribute; a tmpfs charges it as an inode, so the recycle's
// usage check finds it and the recycle fails (the sandbox is then closed,
// not reused). The positive control: the attribute is set, and the next
// run without a recycle reads it.
func TestRecycleFailsOnAnExtendedAttributeOfAScratchDir(t *testing.T) {
	need(t)
	cfg := recycleCfg(t)
	cfg.IDs = sandbox.IDSelf
	ctx, sb := openSandbox(t, cfg)
	if r, _ := runAgain(t, ctx, sb, nil, "dirstamp", "xattr"); len(r.List) != len(scratchDirs) {
		t.Fatalf("as uid 0 inside the harness did not set the attributes: %+v", r)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "dirmeta"); !strings.Contains(strings.Join(r.List, " "), "left-by") {
		t.Fatalf("the next run does not read the attribute: %v", r.List)
	}
	if err := sb.Recycle(ctx); err == nil {
		r, _ := runAgain(t, ctx, sb, nil, "dirmeta")
		t.Fatalf("a recycle succeeded with an extended attribute on a scratch directory; the next run finds %v", r.List)
	}
}

// cloneSleeper starts /bin/sleep 600 as a child that sends its parent no
// signal when it exits (clone with exit signal 0: wait4 without __WALL
// never reports it) and returns its pid.
func cloneSleeper() (int, error) {
	path, _ := unix.BytePtrFromString("/bin/sleep")
	arg, _ := unix.BytePtrFromString("600")
	argv := []*byte{path, arg, nil}
	envv := []*byte{nil}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, _, e := unix.RawSyscall6(unix.SYS_CLONE, 0, 0, 0, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	if pid == 0 { // the child: nothing but system calls until the exec
		unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 127, 0, 0)
	}
	return int(pid), nil
}

// leaveEscapees leaves processes made to outlive the run: a stopped one,
// one that forks without end, one double-forked into a session of its
// own, one whose exit signals nobody (cloneSleeper), and the agent a
// subreaper of the orphans. N counts the processes of the namespace then
// (the positive control: they are there).
func leaveEscapees() result {
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	stopped := exec.Command("/bin/sleep", "600")
	if err := stopped.Start(); err != nil {
		return outcome(err)
	}
	stopped.Process.Signal(syscall.SIGSTOP)
	looper := exec.Command("/bin/sh", "-c", "while :; do /bin/true; done")
	if err := looper.Start(); err != nil {
		return outcome(err)
	}
	daemon := exec.Command("/bin/sh", "-c", "setsid /bin/sleep 600 </dev/null >/dev/null 2>&1 & exit 0")
	if err := daemon.Run(); err != nil {
		return outcome(err)
	}
	if _, err := cloneSleeper(); err != nil {
		return outcome(err)
	}
	ents, err := os.ReadDir("/proc")
	r := outcome(err)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			r.N++
		}
	}
	return r
}

// hardLinks makes one file in /tmp/links and n hard links to it beside
// it: two inodes, n+1 names.
func hardLinks(n int) result {
	dir := "/tmp/links"
	if err := os.Mkdir(dir, 0o700); err != nil {
		return outcome(err)
	}
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		return outcome(err)
	}
	for i := 0; i < n; i++ {
		if err := os.Link(f, filepath.Join(dir, strconv.Itoa(i))); err != nil {
			return result{Errno: errnoOf(err), Error: err.Error(), N: i}
		}
	}
	return result{OK: true, N: n}
}

// TestRecycleLeavesNoProcessOfTheLastTenant: processes made to outlive
// their run (stopped, forking without end, in a session of their own,
// reparented to a subreaper, one whose exit signals nobody) are all gone
// after a recycle: the next run sees only the init and itself. The
// positive control: the planting run counts them.
func TestRecycleLeavesNoProcessOfTheLastTenant(t *testing.T) {
	need(t)
	ctx, sb := openSandbox(t, recycleCfg(t))
	r, _ := runAgain(t, ctx, sb, nil, "escapees")
	if !r.OK || r.N < 6 { // init, agent, stopped, looper, setsid'd, cloned
		t.Fatalf("the plant made too few processes: %+v", r)
	}
	if err := sb.Recycle(ctx); err != nil {
		t.Fatalf("recycle: %v", err)
	}
	after, _ := runAgain(t, ctx, sb, nil, "procs")
	if len(after.List) != 2 {
		t.Errorf("after a recycle the next run (pid %s) sees processes %v", after.Value, after.List)
	}
}

// TestRecycleBoundsTheEntriesItRemoves: a tenant with 20000 names of one
// file in /tmp (hard links: names without inodes) tries to make the
// recycle remove them one by one. Without a mount below it, /tmp is
// replaced by a new tmpfs at once, whatever it holds (with one, the names
// count as inodes against the bound of 4096 and the recycle fails): the
// next run finds none. The positive control: the names are there for the
// next run without a recycle.
func TestRecycleBoundsTheEntriesItRemoves(t *testing.T) {
	need(t)
	const names = 20000
	ctx, sb := openSandbox(t, recycleCfg(t))
	if r, _ := runAgain(t, ctx, sb, nil, "hardlinks", strconv.Itoa(names)); !r.OK {
		t.Fatalf("hardlinks: %+v", r)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "count", "/tmp/links"); r.N != names+1 {
		t.Fatalf("without a recycle the next run counts %d names in /tmp/links, want %d", r.N, names+1)
	}
	if err := sb.Recycle(ctx); err != nil {
		t.Fatalf("recycle: %v", err)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "count", "/tmp/links"); r.N != 0 {
		t.Errorf("after a recycle the next run counts %d names in /tmp/links", r.N)
	}
}

// unixCycle listens on the abstract Unix socket @name and hides it: its
// descriptor and that of the socket it is sent on travel in an
// SCM_RIGHTS message to the latter, and every descriptor the process
// holds is closed. Only the kernel's collection of such cycles ends it.
// Value says whether the socket still took a connection after the close
// (the positive control).
func unixCycle(name string) result {
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return outcome(err)
	}
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		return outcome(err)
	}
	if err := unix.Listen(l, 8); err != nil {
		return outcome(err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return outcome(err)
	}
	if err := unix.Sendmsg(pair[0], []byte{1}, unix.UnixRights(l, pair[1]), nil, 0); err != nil {
		return outcome(err)
	}
	unix.Close(l)
	unix.Close(pair[0])
	unix.Close(pair[1])
	r := unixReach(name)
	r.Value = fmt.Sprint(r.OK)
	r.OK = true
	return r
}

// unixReach connects to the abstract Unix socket @name: OK when it takes
// the connection.
func unixReach(name string) result {
	c, err := net.Dial("unix", "@"+name)
	if err == nil {
		c.Close()
	}
	return outcome(err)
}

// stuckConnection connects with network ("tcp" or "mptcp") to the door
// at addr, whose daemon's end reads nothing, writes until its buffer is
// full and exits: its end lingers, orphaned, with data to send. N is how
// many connections of the namespace /proc/net/tcp then counts.
func stuckConnection(network, addr string) result {
	var d net.Dialer
	d.SetMultipathTCP(network == "mptcp")
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return outcome(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Write(chunk); err != nil {
			break
		}
	}
	return result{OK: true, N: connections("/proc/net/tcp") + connections("/proc/net/tcp6")}
}

// TestRecycleEndsAnAbstractSocketHiddenInFlight: an abstract Unix socket
// (the network namespace's, like TCP's) whose only reference is an
// SCM_RIGHTS message in a cycle outlives every descriptor of it; it
// takes connections until the kernel collects the cycle, and the kernel
// runs its collection when a Unix socket is released while some are in
// flight, not when the cycle's last descriptor is closed. After a
// recycle the next tenant must not find it. The positive control: it
// takes a connection after its planter closed every descriptor.
//
// Found by the red team (the sweep covered TCP and UDP only); the sweep
// now counts every protocol's sockets and has the kernel collect such a
// cycle.
func TestRecycleEndsAnAbstractSocketHiddenInFlight(t *testing.T) {
	need(t)
	ctx, sb := openSandbox(t, recycleCfg(t))
	r, _ := runAgain(t, ctx, sb, nil, "unixcycle", "left-in-flight")
	if !r.OK || r.Value != "true" {
		t.Fatalf("the hidden socket took no connection after its close: %+v", r)
	}
	if err := sb.Recycle(ctx); err != nil {
		t.Fatalf("recycle: %v", err)
	}
	// Each look releases a Unix socket, which has the kernel collect the
	// cycle: one look per plant, the one that releases nothing first.
	if r, _ := runAgain(t, ctx, sb, nil, "read", "/proc/net/unix"); strings.Contains(r.Value, "left-in-flight") {
		t.Errorf("after a recycle the next run reads the last tenant's socket in /proc/net/unix:\n%s", r.Value)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "unixbind", "left-in-flight"); !r.OK {
		t.Errorf("after a recycle the next run cannot bind the last tenant's abstract name: %+v", r)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "unixcycle", "left-in-flight"); !r.OK || r.Value != "true" {
		t.Fatalf("the hidden socket took no connection after its close: %+v", r)
	}
	if err := sb.Recycle(ctx); err != nil {
		t.Fatalf("recycle: %v", err)
	}
	if r, _ := runAgain(t, ctx, sb, nil, "unixreach", "left-in-flight"); r.OK {
		t.Errorf("after a recycle the next run connects to the last tenant's abstract socket")
	}
}

// protoCounts reads the sockets /proc/net/protocols counts of TCP and
// MPTCP, IPv4 and IPv6 (the doors are listeners of both: Go listens with
// MPTCP where the kernel has it).
func protoCounts(table string) map[string]int {
	m := map[string]int{}
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 2 {
			switch f[0] {
			case "TCP", "TCPv6", "MPTCP", "MPTCPv6":
				m[f[0]], _ = strconv.Atoi(f[2])
			}
		}
	}
	return m
}

// TestRecycleEndsOrphanedConnections: a connection to a door whose
// daemon's end reads nothing, its sandbox end with data it cannot send,
// lingers orphaned once its process is gone (FIN_WAIT1, probing a zero
// window); over TCP and over MPTCP (falling back to TCP at the door).
// After a recycle no connection is left, and /proc/net/protocols counts
// the sockets a new sandbox has (its doors). The positive control:
// without a recycle the next run counts the connection.
//
// Found by the red team (mptcp: the doors listened with MPTCP, Go's
// default, and the daemon's MPTCP end outlived the sweep); the doors now
// listen with plain TCP and the sweep counts every protocol.
func TestRecycleEndsOrphanedConnections(t *testing.T) {
	need(t)
	for _, network := range []string{"tcp", "mptcp"} {
		t.Run(network, func(t *testing.T) {
			cfg := recycleCfg(t)
			cfg.Doors = []sandbox.Door{{Name: "d"}}
			fresh := protoCounts(firstLook(t, cfg, "read", "/proc/net/protocols").Value)
			ctx, sb := openSandbox(t, cfg)
			door := sb.Door("d")
			held := make(chan net.Conn, 2)
			go func() {
				for {
					c, err := door.Accept()
					if err != nil {
						return
					}
					held <- c // never read
				}
			}()
			t.Cleanup(func() {
				for len(held) > 0 {
					(<-held).Close()
				}
			})
			if r, _ := runAgain(t, ctx, sb, nil, "stuck", network, door.Addr().String()); !r.OK || r.N == 0 {
				t.Fatalf("stuck: %+v", r)
			}
			if r, _ := runAgain(t, ctx, sb, nil, "traces"); !hasPrefixed(r.List, "tcp") {
				t.Fatalf("without a recycle the next run finds no connection (%v): the orphan did not linger", r.List)
			}
			if err := sb.Recycle(ctx); err != nil {
				t.Fatalf("recycle: %v", err)
			}
			if r, _ := runAgain(t, ctx, sb, nil, "traces"); len(r.List) != 0 {
				t.Errorf("after a recycle the next run finds %v", r.List)
			}
			after, _ := runAgain(t, ctx, sb, nil, "read", "/proc/net/protocols")
			for p, n := range protoCounts(after.Value) {
				if n != fresh[p] {
					t.Errorf("after a recycle /proc/net/protocols counts %d %s sockets, a new sandbox %d: the last tenant's", n, p, fresh[p])
				}
			}
		})
	}
}

// nsSysctls are files of /proc/sys the sandbox's namespaces own: what a
// tenant wrote there would outlive it.
var nsSysctls = []string{
	"/proc/sys/kernel/ns_last_pid", "/proc/sys/kernel/hostname", "/proc/sys/kernel/domainname",
	"/proc/sys/kernel/shm_next_id", "/proc/sys/kernel/msg_next_id", "/proc/sys/kernel/sem_next_id",
	"/proc/sys/kernel/shmmax", "/proc/sys/fs/mqueue/msg_max",
	"/proc/sys/net/ipv4/tcp_max_tw_buckets", "/proc/sys/net/ipv4/ip_local_port_range",
	"/proc/sys/net/ipv4/ping_group_range", "/proc/sys/net/core/somaxconn",
}

// changeNamespaceState tries to change what the sandbox's namespaces
// hold beyond processes, sockets, IPC objects and files: its host and
// domain names, each of nsSysctls (written back as read), and a key in
// the user's keyring. List names each change that took; N counts the
// sysctls read (the positive control of the look).
func changeNamespaceState() result {
	r := result{OK: true}
	if unix.Sethostname([]byte("left-by-a")) == nil {
		r.List = append(r.List, "hostname")
	}
	if unix.Setdomainname([]byte("left-by-a")) == nil {
		r.List = append(r.List, "domainname")
	}
	for _, p := range nsSysctls {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		r.N++
		if os.WriteFile(p, b, 0) == nil {
			r.List = append(r.List, p)
		}
	}
	if _, err := unix.AddKey("user", "left-by-a", []byte("x"), unix.KEY_SPEC_USER_KEYRING); err == nil {
		r.List = append(r.List, "user keyring")
	}
	if read, err := loDown(); err == nil {
		r.List = append(r.List, "lo down")
	} else if !read {
		r.Value = "lo's flags unread: " + err.Error()
	} else {
		r.Errno = errnoOf(err)
	}
	return r
}

// loDown tries to take lo down (SIOCSIFFLAGS without IFF_UP), which would
// leave the next tenant's doors unreachable: a recycle does not bring lo
// up again. read reports whether lo's flags were read.
func loDown() (read bool, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return false, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return false, err
	}
	ifr.SetUint16(ifr.Uint16() &^ unix.IFF_UP)
	return true, unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// TestRecycleTenantCannotChangeTheNamespaces: what the sandbox's
// namespaces hold besides processes, sockets, IPC objects and files (its
// host name, its sysctls, a keyring of the harness's uid, lo's flags) is
// out of a tenant's reach, so no recycle needs to restore it (nor brings
// lo up or turns TIME_WAIT off again). The positive control: the sysctls
// and lo's flags are there to read.
//
// With the single id map (IDSelf) the harness is uid 0 inside, the owner
// of the namespaces' /proc/sys files, whose writes the kernel checks by
// mode (no capability needed): it may set the host and domain names, the
// network namespace's sysctls and the IPC limits, in its own sandbox,
// which is never recycled (TestRecycleKeepsNoSysctlOfTheLastTenant).
// With IDRange (uid 1000) all are refused.
func TestRecycleTenantCannotChangeTheNamespaces(t *testing.T) {
	need(t)
	for _, ids := range []sandbox.IDMode{sandbox.IDRange, sandbox.IDSelf} {
		t.Run(string(ids), func(t *testing.T) {
			cfg := recycleCfg(t)
			cfg.IDs = ids
			r := firstLook(t, cfg, "nsstate")
			if r.N != len(nsSysctls) || r.Value != "" {
				t.Errorf("the harness reads %d of %d sysctls (%s): the look is broken", r.N, len(nsSysctls), r.Value)
			}
			// uid 0 inside (IDSelf) owns them: such a sandbox is never
			// recycled (TestRecycleKeepsNoSysctlOfTheLastTenant).
			if ids == sandbox.IDRange && len(r.List) != 0 {
				t.Errorf("a tenant changed %v", r.List)
			}
			// Refused for want of CAP_NET_ADMIN, not for a malformed request.
			if ids == sandbox.IDRange && r.Errno != "EPERM" {
				t.Errorf("taking lo down: %q, want EPERM", r.Errno)
			}
			if ids == sandbox.IDSelf && len(r.List) == 0 {
				t.Errorf("as uid 0 inside the harness changed none of %d sysctls: the look is broken", r.N)
			}
		})
	}
}

// TestRecycleKeepsNoSysctlOfTheLastTenant: with the single id map
// (IDSelf) a tenant writes the host and domain names, somaxconn,
// mqueue's msg_max and tcp_max_tw_buckets through /proc/sys
// (TestRecycleTenantCannotChangeTheNamespaces): the recycle must refuse
// such a sandbox (the single id map is never handed on), so no tenant's
// values reach another. The positive control: the next run reads the
// values written.
func TestRecycleKeepsNoSysctlOfTheLastTenant(t *testing.T) {
	need(t)
	cfg := recycleCfg(t)
	cfg.IDs = sandbox.IDSelf
	set := map[string]string{
		"/proc/sys/kernel/hostname": "left-by-a", "/proc/sys/kernel/domainname": "left-by-a",
		"/proc/sys/net/core/somaxconn": "17", "/proc/sys/fs/mqueue/msg_max": "17",
		"/proc/sys/net/ipv4/tcp_max_tw_buckets": "4096",
	}
	ctx, sb := openSandbox(t, cfg)
	for p, v := range set {
		if r, _ := runAgain(t, ctx, sb, nil, "sysctlset", p, v); !r.OK {
			t.Fatalf("write %s: %+v", p, r)
		}
		if r, _ := runAgain(t, ctx, sb, nil, "read", p); strings.TrimSpace(r.Value) != v {
			t.Fatalf("without a recycle the next run reads %s %q, not the %q written", p, r.Value, v)
		}
	}
	if err := sb.Recycle(ctx); err == nil {
		t.Fatal("a sandbox whose tenant wrote its namespaces' sysctls (the single id map) was recycled")
	}
}
