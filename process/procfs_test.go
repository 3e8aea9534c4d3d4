package process

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10"
	for _, c := range []struct {
		text string
		ok   bool
		want procStat
	}{
		{"42 (sleep) S 1 42 42" + tail, true, procStat{pid: 42, ppid: 1, pgrp: 42, sid: 42, state: 'S', start: 987654}},
		{"42 (a) b (c)) Z 7 8 9" + tail, true, procStat{pid: 42, ppid: 7, pgrp: 8, sid: 9, state: 'Z', start: 987654}},
		{"42 (short) R 1 2 3", true, procStat{pid: 42, ppid: 1, pgrp: 2, sid: 3, state: 'R'}},
		{"42 (no close paren S 1 2 3", false, procStat{}},
		{"42 (x) S 1 2", false, procStat{}},
		{"42 (x) SS 1 2 3", false, procStat{}},
		{"42 (x) S one 2 3", false, procStat{}},
		{"", false, procStat{}},
	} {
		got, ok := parseStat(42, []byte(c.text))
		if ok != c.ok || got != c.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", c.text, got, ok, c.want, c.ok)
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
