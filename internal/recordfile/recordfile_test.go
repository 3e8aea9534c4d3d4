package recordfile

import (
	"strings"
	"testing"
)

// FileName is injective: ids that used to share a record file ("a/b"
// and "a_b", "" and "episode", long ids with a common start) get distinct
// names, each a single safe path element within the length bound.
func TestSafeFileNameIsInjective(t *testing.T) {
	long := strings.Repeat("x", 250)
	ids := []string{"a/b", "a_b", "a%2Fb", `a\b`, "", "episode", ".", "..", "%2E", "%", "%~", "é/日本",
		long + "1", long + "2", strings.Repeat("/", 255), strings.Repeat("%", 255), strings.Repeat("é", 127) + "a", strings.Repeat("é", 127) + "b"}
	seen := map[string]string{}
	for _, id := range ids {
		n := FileName(id)
		if prev, dup := seen[n]; dup {
			t.Errorf("ids %q and %q both map to %q", prev, id, n)
		}
		seen[n] = id
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") || len(n) > maxFileName {
			t.Errorf("id %q maps to unsafe name %q (%d bytes)", id, n, len(n))
		}
	}
	if got := FileName("a/b"); got != "a%2Fb" {
		t.Errorf("a/b -> %q", got)
	}
	if got := FileName("plain-id_1.x"); got != "plain-id_1.x" {
		t.Errorf("a plain id changed: %q", got)
	}
}
