package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdRelative = regexp.MustCompile("`(\\.\\./[^`\\s]+)`")
)

// Every relative link of the repository's Markdown files, and every
// "../path" it names in code spans, resolves to a file inside the
// repository (testharness/README.md pointed at ../shared/DESIGN.md, a file
// of the project's workspace that a clone does not have).
func TestMarkdownLinksStayInTheRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "bin" || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			targets = append(targets, m[1])
		}
		for _, m := range mdRelative.FindAllStringSubmatch(string(b), -1) {
			targets = append(targets, m[1])
		}
		for _, tgt := range targets {
			if strings.Contains(tgt, "://") || strings.HasPrefix(tgt, "#") || strings.HasPrefix(tgt, "mailto:") {
				continue
			}
			tgt, _, _ = strings.Cut(tgt, "#")
			abs := filepath.Join(filepath.Dir(p), tgt)
			rel, _ := filepath.Rel(root, p)
			if r, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s: %s points outside the repository", rel, tgt)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s: %s does not exist", rel, tgt)
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no link checked")
	}
}

// The README's shell blocks run harnessd as make build leaves it
// (bin/harnessd): a bare "harnessd …" is "command not found" after make
// build.
func TestReadmeShellBlocksRunBinHarnessd(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	in, n := false, 0
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			in = l == "```sh"
		case in:
			for _, cmd := range regexp.MustCompile(`&&|;|\||&|\$\(`).Split(l, -1) {
				cmd = strings.TrimSpace(cmd)
				if strings.HasPrefix(cmd, "harnessd ") {
					t.Errorf("README.md:%d: %q runs harnessd from PATH, not bin/harnessd", i+1, cmd)
				}
				if strings.HasPrefix(cmd, "bin/harnessd ") {
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no bin/harnessd command found in the README's shell blocks")
	}
}
