package simuser

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
)

// chattyUser answers two questions; after the first answer it prints 48
// lines of 1,000,000 bytes that answer nothing, then creates the file mark.
func chattyUser(mark string) string {
	return `read q; printf '{"message":"first"}\n'
row=$(head -c 1000000 /dev/zero | tr '\0' x)
for i in $(seq 48); do printf '%s\n' "$row"; done
: >` + mark + `
read q; printf '{"message":"second"}\n'
exec cat >/dev/null`
}

// What a user program prints between questions waits in its stdout pipe:
// before, a goroutine read it into a buffer of 256 lines of up to 4 MiB,
// so 150 lines of 1 MB were 143 MiB of daemon heap held until the next
// question; the program here prints 48 (46 MiB, well over the 16 MiB the
// test allows held). The program's mark shows whether it could write them all. The
// control reads the 48 lines after that, and the second question's
// answer follows them.
func TestOutputBetweenQuestionsWaitsInThePipe(t *testing.T) {
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), 0)
	mark := filepath.Join(t.TempDir(), "written")
	p, err := sup.Start(process.Spec{Name: "user", Path: "/bin/bash", Args: []string{"-c", chattyUser(mark)},
		Env: process.DefaultEnviron(nil), MaxLineBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := testbin.LiveHeap()
	if ans, err := AskProgram(ctx, p, Query{Type: "start"}); err != nil || ans.Message == nil || *ans.Message != "first" {
		t.Fatalf("first question: %+v %v", ans, err)
	}
	held := testbin.HeapWhileUnread(t, p, mark, base)
	t.Logf("between questions the daemon held %d MiB of the program's 46 MiB", held>>20)
	if held > 16<<20 {
		t.Errorf("output printed between questions is held by the daemon: %d MiB", held>>20)
	}
	for i := range 48 { // the control: the lines waited in the pipe
		if l, err := p.ReadLine(ctx); err != nil || l.Size != 1000000 {
			t.Fatalf("line %d printed between questions: %d bytes, %v", i, l.Size, err)
		}
	}
	if ans, err := AskProgram(ctx, p, Query{Type: "observation", Turn: 1}); err != nil || ans.Message == nil || *ans.Message != "second" {
		t.Fatalf("second question: %+v %v", ans, err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("once its lines were read the program has not written every line: %v", err)
	}
}
