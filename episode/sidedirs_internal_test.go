package episode

import (
	"os"
	"path/filepath"
	"testing"
)

// A tool server's directory named through a link is bound as the
// directory it names, with the hidden file inside covered (judged by the
// link's own name, the bind showed the daemon's configuration file); a
// directory inside a hidden one (record_dir) is not bound. The control:
// the same directory named directly is bound with the file covered.
func TestSideDirsJudgeTheDirectoryALinkNames(t *testing.T) {
	base := t.TempDir()
	e := testEnv(t, filepath.Join(base, "session"), 0)
	tools := filepath.Join(base, "tools")
	conf := filepath.Join(tools, "env.yaml")
	records := filepath.Join(base, "records")
	for _, d := range []string{tools, filepath.Join(records, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(conf, []byte("token: s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "tools-link")
	if err := os.Symlink(tools, link); err != nil {
		t.Fatal(err)
	}
	e.Hide = []string{conf}
	e.Config.RecordDir = records
	covered := func(dir string) (bound, cover bool) {
		for _, b := range e.sideDirs([]string{dir}) {
			bound = bound || b.Src == tools
			cover = cover || b.Dst == conf
		}
		return bound, cover
	}
	if bound, cover := covered(tools); !bound || !cover {
		t.Fatalf("the control, the directory by its own name: bound %v, configuration covered %v", bound, cover)
	}
	if bound, cover := covered(link); !bound || !cover {
		t.Errorf("the directory through a link: bound as %s %v, configuration covered %v", tools, bound, cover)
	}
	if binds := e.sideDirs([]string{filepath.Join(records, "sub")}); len(binds) != 0 {
		t.Errorf("a directory inside record_dir is bound: %v", binds)
	}
}
