package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10"
	for _, c := range []struct {
		text string
		ok   bool
		want Stat
	}{
		{"42 (sleep) S 1 42 42" + tail, true, Stat{PID: 42, PPID: 1, PGID: 42, SID: 42, State: 'S', StartTicks: 987654}},
		{"42 (a) b (c)) Z 7 8 9" + tail, true, Stat{PID: 42, PPID: 7, PGID: 8, SID: 9, State: 'Z', StartTicks: 987654}},
		{"42 (short) R 1 2 3", true, Stat{PID: 42, PPID: 1, PGID: 2, SID: 3, State: 'R'}},
		{"42 (no close paren S 1 2 3", false, Stat{}},
		{"42 (x) S 1 2", false, Stat{}},
		{"42 (x) SS 1 2 3", false, Stat{}},
		{"42 (x) S one 2 3", false, Stat{}},
		{"", false, Stat{}},
	} {
		got, ok := ParseStat(42, []byte(c.text))
		if ok != c.ok || got != c.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

func TestReadStatSelf(t *testing.T) {
	st, ok := ReadStat(os.Getpid())
	if !ok || st.PID != os.Getpid() || st.PPID != os.Getppid() || st.StartTicks == 0 || st.Dead() {
		t.Fatalf("ReadStat(self) = %+v, %v", st, ok)
	}
	if Ended(st.PID, st.StartTicks) {
		t.Fatal("Ended(self) with its own start time")
	}
	if !Ended(st.PID, st.StartTicks+1) {
		t.Fatal("a different start time is not the same process")
	}
	if _, ok := ReadStat(-1); ok {
		t.Fatal("ReadStat(-1) succeeded")
	}
}

func TestParseCgroups(t *testing.T) {
	got := ParseCgroups([]byte("9:name=systemd:/\n4:memory:/a/b\n1:cpu,cpuacct:/\n0::/x y\n"))
	if len(got) != 4 || got[1].Path != "/a/b" || got[1].Controllers[0] != "memory" ||
		len(got[2].Controllers) != 2 || !got[3].V2() || got[3].Path != "/x y" || got[0].V2() {
		t.Fatalf("ParseCgroups = %+v", got)
	}
}

func TestParseMountinfoLine(t *testing.T) {
	m, ok := ParseMountinfoLine(`41 31 0:38 /a\040b /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate`)
	if !ok || m.Root != "/a b" || m.Point != "/sys/fs/cgroup/unified" || m.FSType != "cgroup2" || m.Source != "cgroup2" || len(m.SuperOptions) != 2 {
		t.Fatalf("ParseMountinfoLine = %+v, %v", m, ok)
	}
	if _, ok := ParseMountinfoLine("no separator here"); ok {
		t.Fatal("a line without \" - \" parsed")
	}
}

func TestSelfNamespaceAndChildren(t *testing.T) {
	ns := PIDNamespace(os.Getpid())
	if ns == "" {
		t.Fatal("no PID namespace for self")
	}
	found := false
	for _, pid := range PidsInNamespace(ns) {
		found = found || pid == os.Getpid()
	}
	if !found {
		t.Fatal("self not among the pids of its own namespace")
	}
	if InnerPid(os.Getpid()) == 0 {
		t.Fatal("no NSpid for self")
	}
}
