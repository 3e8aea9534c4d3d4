package episode

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSnapshot times one fork's storage: Snapshot of an episode whose
// workspace holds 1 MiB or 200 MiB (files of 64 KiB and 1 MiB), then an
// episode opened from it (Spec.From, LevelDirectories), with the default
// 10 GiB quota image (image-copy on this host's file system), without a
// quota (tree-copy) and, where mkfs.xfs is installed, both again on an
// xfs loop file system with reflinks. It reports the two times apart
// (snapshot-ms, open-ms) and the host bytes of the snapshot
// (snapshot-bytes, Snapshot.Bytes) and of the sibling's directories
// (sibling-bytes: its image's st_blocks, or its trees'), beside the floor
// of a fresh episode's directories (fresh-open-ms: from the template).
func BenchmarkSnapshot(b *testing.B) {
	type host struct {
		name string
		dir  func(b *testing.B) string
	}
	hosts := []host{{"host", func(b *testing.B) string { return b.TempDir() }}}
	if _, err := os.Stat("/usr/sbin/mkfs.xfs"); err == nil {
		hosts = append(hosts, host{"xfs-reflink", func(b *testing.B) string { return reflinkDir(b) }})
	}
	for _, h := range hosts {
		for _, st := range []struct {
			name string
			disk int64
		}{{"quota", 10 << 30}, {"noquota", 0}} {
			for _, size := range []int{1 << 20, 200 << 20} {
				name := fmt.Sprintf("%s/%s/%dMiB", h.name, st.name, size>>20)
				b.Run(name, func(b *testing.B) {
					if st.disk > 0 {
						needQuota(b)
					}
					benchSnapshot(b, h.dir(b), st.disk, size)
				})
			}
		}
	}
}

func benchSnapshot(b *testing.B, dir string, disk int64, size int) {
	e := testEnv(b, filepath.Join(dir, "session"), disk)
	ep := openDirs(b, e, nil)
	file := 64 << 10
	if size >= 64<<20 {
		file = 1 << 20
	}
	buf := make([]byte, file)
	for i := 0; i < size/file; i++ {
		rand.Read(buf)
		p := filepath.Join(ep.Dirs().Workspace, fmt.Sprintf("d%d/f%d", i%16, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Sync()
	var snapT, openT, freshT time.Duration
	var snapBytes, sibBytes int64
	var method string
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		s, err := ep.Snapshot(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		sib, err := Open(context.Background(), Spec{Env: e, ID: "sibling", From: s}, LevelDirectories)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		snapT += t1.Sub(t0)
		openT += t2.Sub(t1)
		b.StopTimer()
		method = s.Method()
		snapBytes = s.Bytes()
		if sib.disk != nil {
			var st syscall.Stat_t
			syscall.Stat(sib.disk.Image, &st)
			sibBytes = st.Blocks * 512
		} else {
			sibBytes, _ = diskBytes(sib.Dirs().Root)
		}
		sib.Close(context.Background())
		s.Close()
		// The floor: a fresh episode's directories (the quota image from
		// its template, no files).
		t3 := time.Now()
		fresh, err := Open(context.Background(), Spec{Env: e, ID: "fresh"}, LevelDirectories)
		if err != nil {
			b.Fatal(err)
		}
		freshT += time.Since(t3)
		fresh.Close(context.Background())
		b.StartTimer()
	}
	b.ReportMetric(float64(snapT.Microseconds())/1e3/float64(b.N), "snapshot-ms")
	b.ReportMetric(float64(openT.Microseconds())/1e3/float64(b.N), "open-ms")
	b.ReportMetric(float64(freshT.Microseconds())/1e3/float64(b.N), "fresh-open-ms")
	b.ReportMetric(float64(snapBytes), "snapshot-bytes")
	b.ReportMetric(float64(sibBytes), "sibling-bytes")
	b.Logf("method %s", method)
}
