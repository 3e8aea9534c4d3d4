package bridge

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/internal/testbin"
)

// TestRecordMemoryStaysNearItsBound (an outside red team's lead): the
// record of served calls is bounded by MaxRecordBytes of JSON, but a call
// with tiny arguments and result costs the daemon far more in Go objects
// than its few dozen bytes of JSON: a harness making many such calls held
// several times the bound. Filled to its bound with such calls, the record
// now holds at most twice its bound of heap. The control: the record is
// full (the bound was reached).
func TestRecordMemoryStaysNearItsBound(t *testing.T) {
	const bound = 1 << 20
	before := testbin.HeapAlloc()
	r := newCallRecord(ServerOptions{Record: true, MaxRecordBytes: bound})
	for i := 0; !r.full && i < 1<<20; i++ {
		r.keep("t", json.RawMessage(`{}`), mcp.NewToolResultText(""))
	}
	held := int64(testbin.HeapAlloc()) - int64(before)
	runtime.KeepAlive(r)
	t.Logf("%d records kept in a record bounded at %d bytes: %d bytes of heap", len(r.recs), bound, held)
	if !r.full {
		t.Fatal("control: the record never filled")
	}
	if held > 2*bound {
		t.Errorf("a record bounded at %d bytes holds %d bytes of heap (%.1fx) in %d records", bound, held, float64(held)/bound, len(r.recs))
	}
}
