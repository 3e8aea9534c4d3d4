package beneath

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// benchTree makes a workspace-like tree: dirs directories, 4 deep, each
// with files files.
func benchTree(b *testing.B, dirs, files int) string {
	root := b.TempDir()
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("a%d", d%8), fmt.Sprintf("b%d", d%32), fmt.Sprintf("c%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.py", f)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

// BenchmarkLchownTree gives a tree of 10,000 files in 500 directories to
// one uid, as a sandbox's run does to its workspace: "owned" when the ids
// are already the wanted ones (every run after the first), "changed" when
// every entry changes owner at each round.
func BenchmarkLchownTree(b *testing.B) {
	if os.Geteuid() != 0 {
		testbin.Missing(b, "chowning to another uid needs root")
	}
	dir := benchTree(b, 500, 20)
	const entries = 500*20 + 500 + 32 + 8 + 1
	for _, c := range []struct {
		name string
		uid  func(round int) int
	}{
		{"owned", func(int) int { return 4242 }},
		{"changed", func(round int) int { return 4242 + round%2 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := LchownTree(dir, func(uint32, uint32) (int, int, bool) { return 4241, 4241, true }); err != nil {
				b.Fatal(err)
			}
			round := 0
			for b.Loop() {
				id := c.uid(round)
				round++
				if err := LchownTree(dir, func(uint32, uint32) (int, int, bool) { return id, id, true }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/entries/1000, "µs/entry")
		})
	}
}
