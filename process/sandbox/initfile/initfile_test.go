package initfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

func TestWriteInitFileMakesAReadOnlyFileAndReusesIt(t *testing.T) {
	tmp := t.TempDir()
	bin := []byte("\x7fELF pretend init")
	p, err := writeInitFile(bin, tmp)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o555 {
		t.Fatalf("init file mode %v, want 0555", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(p)); di.Mode().Perm() != 0o711 {
		t.Fatalf("init directory mode %v, want 0711", di.Mode().Perm())
	}
	again, err := writeInitFile(bin, tmp)
	if err != nil || again != p {
		t.Fatalf("second write: %q %v, want %q", again, err, p)
	}
	other, err := writeInitFile([]byte("another build"), tmp)
	if err != nil || other == p {
		t.Fatalf("another build's init: %q %v, want a new name", other, err)
	}
}

func TestWriteInitFileReplacesATamperedFile(t *testing.T) {
	tmp := t.TempDir()
	bin := []byte("the real init")
	p, err := writeInitFile(bin, tmp)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o755)
	if err := os.WriteFile(p, []byte("planted"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := writeInitFile(bin, tmp); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, bin) {
		t.Fatalf("init file holds %q after rewrite, want the real init", got)
	}
}

func TestWriteInitFileRefusesADirectoryItDoesNotOwnAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		fail  string
	}{
		{"ours", func(t *testing.T, dir string) { os.Mkdir(dir, 0o711) }, ""}, // the control
		{"group-writable", func(t *testing.T, dir string) { os.Mkdir(dir, 0o711); os.Chmod(dir, 0o771) }, "writable by others"},
		{"a link", func(t *testing.T, dir string) {
			target := t.TempDir()
			os.Chmod(target, 0o711)
			os.Symlink(target, dir)
		}, "not what harnessd made"},
		{"another uid's", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				testbin.Missing(t, "chown to another uid needs root")
			}
			os.Mkdir(dir, 0o711)
			os.Chown(dir, 4242, 4242)
		}, "belongs to uid 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			tc.setup(t, filepath.Join(tmp, fmt.Sprintf("harnessd-init-%d", os.Geteuid())))
			_, err := writeInitFile([]byte("init"), tmp)
			switch {
			case tc.fail == "" && err != nil:
				t.Fatalf("control: %v", err)
			case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
				t.Fatalf("got %v, want an error saying %q", err, tc.fail)
			}
		})
	}
}

func TestPlaceInitFileSkipsDirectoriesTheSandboxCannotReach(t *testing.T) {
	private := t.TempDir() // 0700, as a test's (or a user's) $TMPDIR often is
	// Under /tmp itself, not $TMPDIR (which may be private): every uid
	// may traverse /tmp.
	shared, err := os.MkdirTemp("/tmp", "harnessd-initfile-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shared)
	os.Chmod(shared, 0o755)
	p, err := placeInitFile([]byte("init"), []string{private, shared})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p, shared+"/") {
		t.Fatalf("init placed at %s, want under %s (the reachable one)", p, shared)
	}
	if _, err := placeInitFile([]byte("init"), []string{private}); err == nil || !strings.Contains(err.Error(), "not traversable") {
		t.Fatalf("only a private candidate: %v, want an error saying it is not traversable", err)
	}
}
