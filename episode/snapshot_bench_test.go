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

	"golang.org/x/sys/unix"

	"github.com/harnessd/harnessd/internal/treecopy"
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
// of a fresh episode's directories (fresh-open-ms: from the template). On
// the xfs file system, which is the benchmark's own, fs-bytes is what the
// snapshot and the sibling took of its free space together: what the
// reflinks really cost (st_blocks counts shared extents in full).
func BenchmarkSnapshot(b *testing.B) {
	type host struct {
		name    string
		dir     func(b *testing.B) string
		private bool // a file system of the benchmark's own: its free space is ours to measure
	}
	hosts := []host{{"host", func(b *testing.B) string { return b.TempDir() }, false}}
	if _, err := os.Stat("/usr/sbin/mkfs.xfs"); err == nil {
		hosts = append(hosts, host{"xfs-reflink", func(b *testing.B) string { return reflinkDir(b) }, true})
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
					benchSnapshot(b, h.dir(b), st.disk, size, h.private)
				})
			}
		}
	}
}

func benchSnapshot(b *testing.B, dir string, disk int64, size int, private bool) {
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
	var snapBytes, sibBytes, fsBytes int64
	var method string
	b.ResetTimer()
	for range b.N {
		var before, after unix.Statfs_t
		if private {
			b.StopTimer()
			unix.Sync()
			unix.Statfs(dir, &before)
			b.StartTimer()
		}
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
		if private {
			unix.Sync()
			unix.Statfs(dir, &after)
			fsBytes = int64(before.Bfree-after.Bfree) * after.Bsize
		}
		method = s.Method()
		snapBytes = s.Bytes()
		if sib.disk != nil {
			var st syscall.Stat_t
			syscall.Stat(sib.disk.Image, &st)
			sibBytes = st.Blocks * 512
		} else {
			sibBytes, _ = treecopy.Bytes(sib.Dirs().Root)
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
	if private {
		b.ReportMetric(float64(fsBytes), "fs-bytes")
	}
	b.Logf("method %s", method)
}

// BenchmarkForkStorage is the storage share of a fork of G = 8 siblings:
// one Snapshot of an episode whose workspace holds 1 MiB (and a HOME of
// 256 KiB, an agent's session files), then 8 episodes opened from it at
// once (LevelDirectories), with the default 10 GiB quota image and
// without a quota, on this host's file system. total-ms is the snapshot
// plus the slowest open.
func BenchmarkForkStorage(b *testing.B) {
	for _, st := range []struct {
		name string
		disk int64
	}{{"quota", 10 << 30}, {"noquota", 0}} {
		b.Run(st.name, func(b *testing.B) {
			if st.disk > 0 {
				needQuota(b)
			}
			e := testEnv(b, filepath.Join(b.TempDir(), "session"), st.disk)
			ep := openDirs(b, e, nil)
			buf := make([]byte, 64<<10)
			for i := range 16 {
				rand.Read(buf)
				os.WriteFile(filepath.Join(ep.Dirs().Workspace, fmt.Sprintf("f%d", i)), buf, 0o644)
			}
			for i := range 4 {
				os.WriteFile(filepath.Join(ep.Dirs().Home, fmt.Sprintf("s%d.jsonl", i)), buf, 0o600)
			}
			const g = 8
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				s, err := ep.Snapshot(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				sibs := make([]*Episode, g)
				errs := make(chan error, g)
				for i := range g {
					go func() {
						var err error
						sibs[i], err = Open(context.Background(), Spec{Env: e, ID: fmt.Sprintf("sib-%d", i), From: s}, LevelDirectories)
						errs <- err
					}()
				}
				for range g {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(t0)
				b.StopTimer()
				for _, x := range sibs {
					x.Close(context.Background())
				}
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "total-ms")
		})
	}
}
