package evaljob

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Writers of one file each write whole content through a temporary file
// of their own (renameio, as an episode's export is written, where an
// ended episode's export may be written while a new episode of the same id
// writes its own): every write succeeds and the file is always one writer's
// whole JSON. With one temporary name shared by every writer, one's
// rename took the other's file away (ENOENT) or renamed a file the other
// was still writing (a cut document).
func TestWritersOfOneFileDoNotShareATemporaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.json")
	var wg sync.WaitGroup
	errs := make(chan error, 8*40)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := map[string]string{"writer": string(rune('a' + w)), "pad": string(bytes.Repeat([]byte{'x'}, 64<<10))}
			for range 40 {
				if err := writeJSON(path, v); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a concurrent write failed: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("the file is not one writer's whole JSON: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("%d files left in the directory, want the one written", len(ents))
	}
}
