package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

// TestANumberBeyondFloat64DoesNotBreakTheClient: a harness that reports a
// number beyond float64's range (1e400) in a tool call's arguments or its
// turn's extra fields had it passed to the trainer as written, and
// harnessd's own Go client failed the step ("bad observation: cannot
// unmarshal number 1e400"): the trainer lost the turn (Python makes it an
// infinity, which it writes back as Infinity, not JSON). Now the harness's
// line is a protocol error, whose observation the client decodes (the
// other adapters' extras: session's shapedExtra). The control: a large
// number in range passes whole.
func TestANumberBeyondFloat64DoesNotBreakTheClient(t *testing.T) {
	ts := consoleServer(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env := consoleClient(ctx, t, ts)
	for _, line := range []string{
		`rawline {"type":"turn_complete","data":{"response":"r","huge":{"n":1e400}}}`,
		`rawline {"type":"tool_call","data":{"tool_name":"x","arguments":{"n":-2e999}}};;reply ok`,
	} {
		if _, err := env.Reset(ctx, client.ResetOptions{}); err != nil {
			t.Fatal(err)
		}
		obs, err := env.Step(ctx, `rawline {"type":"tool_call","data":{"tool_name":"x","arguments":{"n":1e300}}};;reply ok`)
		if err != nil {
			t.Fatalf("control, 1e300 in a tool call's arguments: %v", err)
		}
		if b, _ := json.Marshal(obs.Metadata.TurnEvents); obs.Done || !strings.Contains(string(b), `"arguments":{"n":1e300}`) {
			t.Fatalf("control, 1e300 in a tool call's arguments: done %v, events %s", obs.Done, b)
		}
		obs, err = env.Step(ctx, line)
		if err != nil {
			t.Fatalf("%s: the client's step failed: %v", line, err)
		}
		if !obs.Done || obs.Metadata.ErrorType != "protocol_error" || !strings.Contains(obs.Metadata.Error, "beyond float64's range") {
			t.Errorf("%s: done %v, error_type %q, error %q; want protocol_error naming the number", line, obs.Done, obs.Metadata.ErrorType, obs.Metadata.Error)
		}
	}
}
