package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
)

// bigReplyAgent is a line-protocol harness that ends every turn with a
// response of 3 MiB (under the 4 MiB stdout line bound).
const bigReplyAgent = `import sys
print('{"type":"ready"}', flush=True)
big = "r" * (3 << 20)
for line in sys.stdin:
    sys.stdout.write('{"type":"turn_complete","data":{"response":"' + big + '","done":false}}\n')
    sys.stdout.flush()
`

// TestConsoleBoundsATurnWindowByBytes: the console keeps a live
// session's latest turns (each turn's message and observation) within
// the session's own window bounds, 1,000 turns and 16 MiB, not 1,000 turns
// whatever their size. A harness that ends each turn with a 3 MiB response
// (turn_complete is exempt from the turn's event bounds; a stdout line may
// be 4 MiB) would otherwise make the daemon keep 3 MiB a turn: 3 GiB for
// one session at 1,000 turns. The test runs 24 turns (72 MiB of
// responses) and wants the daemon's heap to grow by at most 48 MiB (the
// console's 16 MiB and the session's, with room; measured 15 MiB, and
// 72 MiB with the window's byte bound lifted). Each turn's megabytes cost seconds
// under the race detector (its shadow memory faulted in for every new
// buffer): 40 turns took 105 s, the package's longest test by far. The controls: each observation carries the whole response to
// the trainer, and the console's episode view lists the latest turns in
// order, the last one whole, and names the turns before them as left out.
func TestConsoleBoundsATurnWindowByBytes(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testbin.Missing(t, "python3 is not on PATH: %v", err)
	}
	const turns = 24
	script := filepath.Join(t.TempDir(), "agent.py")
	if err := os.WriteFile(script, []byte(bigReplyAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		Name:      "big-replies",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{py, script}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
	}
	ts := start(t, Options{Config: cfg})
	c := ts.ws(t, "/ws", nil)
	r := roundTrip(t, c, `{"type":"reset","data":{}}`)
	if r["type"] != "observation" {
		t.Fatalf("reset: %v", r)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	for i := range turns {
		r := roundTrip(t, c, `{"type":"step","data":{"message":"go"}}`)
		md, _ := data(r)["metadata"].(map[string]any)
		if resp, _ := md["response"].(string); len(resp) != 3<<20 {
			t.Fatalf("control: turn %d's response is %d bytes, want 3 MiB: %v", i+1, len(resp), md["error"])
		}
	}
	grew := int64(heap()) - int64(before)
	t.Logf("%d turns of 3 MiB responses: heap in use grew by %d MiB", turns, grew>>20)
	var sessions struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	webGet(t, ts.url+"/web/api/sessions", "", &sessions)
	if len(sessions.Sessions) != 1 {
		t.Fatalf("control: sessions %+v", sessions)
	}
	var ep struct {
		Records []map[string]any `json:"records"`
		Omitted struct {
			Turns    int `json:"turns"`
			LastTurn int `json:"last_turn"`
		} `json:"omitted"`
	}
	webGet(t, ts.url+"/web/api/sessions/"+sessions.Sessions[0].ID+"/episode", "", &ep)
	var listed []int
	lastResponse := -1
	for _, rec := range ep.Records {
		if rec["kind"] == "observation" {
			n, _ := rec["turn"].(float64)
			listed = append(listed, int(n))
			md, _ := rec["observation"].(map[string]any)["metadata"].(map[string]any)
			resp, _ := md["response"].(string)
			lastResponse = len(resp)
		}
	}
	t.Logf("the console's episode view lists %d observations (turns %v), omitted %+v", len(listed), listed, ep.Omitted)
	om := ep.Omitted
	if om.Turns != om.LastTurn || len(listed) == 0 || listed[len(listed)-1] != turns || lastResponse != 3<<20 {
		t.Errorf("control: the console's episode view lists turns %v (the last with a response of %d bytes), omitted %+v; want the latest turns, the last whole, the ones before them omitted", listed, lastResponse, om)
	} else {
		for i, n := range listed[len(listed)-(turns-om.LastTurn):] {
			if n != om.LastTurn+1+i {
				t.Errorf("control: the console's episode view lists turns %v after omitting 1–%d", listed, om.LastTurn)
				break
			}
		}
	}
	if grew > 48<<20 {
		t.Errorf("one session's %d turns of 3 MiB responses hold %d MiB of the daemon's heap; want at most 48 MiB (the console's window and the session's are 16 MiB each)", turns, grew>>20)
	}
}
