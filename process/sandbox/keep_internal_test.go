package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

// readInSandbox runs the test binary's agent (sandbox_test's TestMain
// dispatches "__sandbox-test-agent") in a sandbox to read path, and
// returns whether it could and what it read.
func readInSandbox(t *testing.T, path string) (bool, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := Start(ctx, Config{Name: "keep", Stdout: w, Stderr: os.Stderr, Binds: []Bind{{Src: self, Dst: "/harnessd-test/agent"}}})
	w.Close()
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	defer sb.Close()
	if _, err := sb.Run(ctx, Command{Path: "/harnessd-test/agent", Args: []string{"__sandbox-test-agent", "read", path}}); err != nil {
		t.Fatalf("run agent: %v", err)
	}
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		t.Fatal("no result from the agent")
	}
	var res struct {
		OK    bool   `json:"ok"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
		t.Fatalf("agent said %q: %v", sc.Text(), err)
	}
	return res.OK, res.Value
}

// TestKeptFileThroughAHiddenDirectory stands in for a host whose
// /etc/resolv.conf links into /run (systemd-resolved): a link on the host
// to a file under /run reads through in the sandbox when it is on the
// keep list, and not when it is not (the control: /run is hidden).
func TestKeptFileThroughAHiddenDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		testbin.Missing(t, "root (a file in the host's /run)")
	}
	if r := Probe(context.Background(), ""); !r.OK {
		testbin.Missing(t, "sandbox: %s", r.Detail)
	}
	dir := "/run/harnessd-keep-test-" + strconv.Itoa(os.Getpid())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	const want = "nameserver 192.0.2.53\n"
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	links, err := os.MkdirTemp("/var/tmp", "harnessd-keep-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(links) })
	os.Chmod(links, 0o755)
	link := filepath.Join(links, "resolv.conf")
	if err := os.Symlink(filepath.Join(dir, "resolv.conf"), link); err != nil {
		t.Fatal(err)
	}
	if ok, got := readInSandbox(t, link); ok {
		t.Fatalf("control: a link into the hidden /run read %q without being kept", got)
	}
	saved := keptThrough
	keptThrough = append(append([]string(nil), saved...), link)
	t.Cleanup(func() { keptThrough = saved })
	if ok, got := readInSandbox(t, link); !ok || got != want {
		t.Fatalf("kept link read %v %q, want %q", ok, got, want)
	}
}
