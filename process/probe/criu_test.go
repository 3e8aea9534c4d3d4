package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CRIU probe reports criu check's verdict and reason, and is never a
// failure: the check's exit status decides available or missing.
func TestCRIUItem(t *testing.T) {
	dir := t.TempDir()
	fake := func(name, script string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	if it := criuItem(ctx, ""); it.Status != StatusMissing || !strings.Contains(it.Detail, "not installed") || !strings.Contains(it.Detail, "optional") {
		t.Errorf("no criu: %+v", it)
	}
	// What Debian's criu 3.17 prints on kernel 6.18.
	bad := fake("criu-bad", `[ "$1" = check ] || exit 2
echo 'Error (criu/util.c:642): exited, status=1' >&2
echo 'Error (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds' >&2
echo 'Error (criu/vdso.c:613): vdso: Failed to fill self vdso symtable' >&2
exit 1
`)
	it := criuItem(ctx, bad)
	if it.Status != StatusMissing || !strings.Contains(it.Detail, "vdso: Unexpected rt vDSO area bounds; vdso: Failed to fill self vdso symtable") {
		t.Errorf("failing check: %+v", it)
	}
	good := fake("criu-good", `[ "$1" = check ] || exit 2
echo 'Looks good.'
`)
	if it := criuItem(ctx, good); it.Status != StatusAvailable || !strings.Contains(it.Detail, "Looks good.") {
		t.Errorf("passing check: %+v", it)
	}
	// The real one, where installed: whatever it says, never failed.
	if p := findCRIU(); p != "" {
		it := probeCRIU(ctx)
		if it.Status != StatusAvailable && it.Status != StatusMissing {
			t.Errorf("criu at %s: %+v", p, it)
		}
		t.Logf("this host: %s: %s", it.Status, it.Detail)
	}
}
