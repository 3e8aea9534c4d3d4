package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/internal/testbin"
)

// A sampling value compared under a pin, and JSON canonicalised for a
// fork's replay, are decoded into Go values only while small: an array of
// numbers is one JSON container (the door charges it as such) but costs
// tens of times its size decoded. The controls: small values compare by
// value and canonicalise with their keys sorted, as before.
func TestLargeJSONIsComparedWithoutDecoding(t *testing.T) {
	if !sameJSON(json.RawMessage(`[0.70, 1]`), json.RawMessage(`[0.7,1]`)) {
		t.Error("the control: small values no longer compare by value")
	}
	if got := string(canonicalJSON([]byte(`{"b":1, "a":[2]}`))); got != `{"a":[2],"b":1}` {
		t.Errorf("the control: canonicalJSON of a small object %s", got)
	}
	zeros := "[" + strings.Repeat("0,", 4<<20) + "0]" // 8 MiB
	spaced := strings.ReplaceAll(zeros, ",", ", ")
	var same bool
	got := testbin.Allocated(func() { same = sameJSON(json.RawMessage(zeros), json.RawMessage(spaced)) })
	t.Logf("comparing two 8 MiB sampling values: same %v, %d MiB allocated", same, got>>20)
	if got > 64<<20 {
		t.Errorf("comparing two 8 MiB sampling values allocated %d MiB", got>>20)
	}
	var canon []byte
	got = testbin.Allocated(func() { canon = canonicalJSON([]byte(spaced)) })
	t.Logf("canonicalising 8 MiB: %d MiB allocated", got>>20)
	if got > 64<<20 || string(canon) != zeros {
		t.Errorf("canonicalising 8 MiB allocated %d MiB (compacted: %v)", got>>20, string(canon) == zeros)
	}
}
