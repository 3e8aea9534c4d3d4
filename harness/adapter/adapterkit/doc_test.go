package adapterkit

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness"
)

// TestProtocolDocListsTheEnvironment keeps docs/protocol.md's table of the
// environment a harness receives in step with Env: every HARNESSD_ variable
// Env sets is documented, and the table names no other one but the line
// protocol's HARNESSD_PROTOCOL.
func TestProtocolDocListsTheEnvironment(t *testing.T) {
	b, err := os.ReadFile("../../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const heading = "## The environment a harness receives\n"
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("docs/protocol.md has no section %q", strings.TrimSpace(heading))
	}
	section := doc[i+len(heading):]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(HARNESSD_[A-Z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	l := &harness.Launch{EpisodeID: "e", Workspace: "/w", MCP: &harness.MCPInjection{URL: "u", Token: "t", ConfigPath: "c"},
		Model: harness.ModelAccess{Root: "http://127.0.0.1:1", Key: "k"}}
	want := []string{"HARNESSD_PROTOCOL"} // the jsonl adapter's addition
	for _, kv := range Env(l) {
		name, _, _ := strings.Cut(kv, "=")
		want = append(want, name)
	}
	slices.Sort(documented)
	slices.Sort(want)
	if !slices.Equal(documented, want) {
		t.Fatalf("docs/protocol.md documents %v; the adapters give %v", documented, want)
	}
}
