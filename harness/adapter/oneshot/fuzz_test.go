package oneshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/fuzzcheck"
	"github.com/harnessd/harnessd/wire"
)

// FuzzFormats feeds one turn's stdout, line by line, to the mapper of a
// format (the first byte picks it) as Turn does: every line gives
// well-formed events or a protocol error, and the turn's result encodes.
func FuzzFormats(f *testing.F) {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range parsers {
			if !yield(k) {
				return
			}
		}
	})
	for i, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", name+".jsonl"))
		if err != nil {
			b = []byte("plain text\n\x1b[31mred\x1b[0m\n{\"type\":\"session\",\"session_id\":\"s1\"}\n" +
				`{"type":"text_output","data":{"text":"hi"}}` + "\n" + `{"type":"turn_complete","data":{"response":"ok","done":true,"n":1}}`)
		}
		f.Add(byte(i), b)
	}
	f.Add(byte(0), []byte(`{"type":"item.completed","item":{"type":"mcp_tool_call","arguments":[1],"result":{"content":"x"}}}`))
	f.Add(byte(2), []byte(`{"type":"tool_use","tool_name":5,"parameters":null}`+"\n"+`{"type":"result","stats":{"a":"b"}}`))
	f.Fuzz(func(t *testing.T, pick byte, out []byte) {
		name := names[int(pick)%len(names)]
		ps := parsers[name]()
		emit := func(e wire.Event) { fuzzcheck.Emitted(t, e) }
		for line := range bytes.SplitSeq(out, []byte("\n")) {
			if err := ps.line(line, emit); err != nil {
				var fl *harness.Failure
				if !errors.As(err, &fl) || fl.Type != wire.FailureProtocol || fl.Message == "" {
					t.Fatalf("%s: a line failed with %v, not a protocol error", name, err)
				}
				return
			}
		}
		_, _, extra := ps.result(emit)
		fuzzcheck.Encodes(t, name+" turn extra", extra)
	})
}
