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
