package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// TestContinuedConversationSameEngineBodies: a Chat Completions
// conversation whose requests each continue the one before (decoded by
// what is new, dialect.Memo), some with hostile extras in escaped names,
// reaches the engine as the very bytes the same requests do when each
// comes after an unrelated one (decoded in full), and every call is sent
// exactly the pinned sampling.
func TestContinuedConversationSameEngineBodies(t *testing.T) {
	llmA, llmB := engine(t, fakellm.Options{}), engine(t, fakellm.Options{})
	a := startGateway(t, llmA.URL(), Options{Sampling: testPin})
	b := startGateway(t, llmB.URL(), Options{Sampling: testPin})
	extras := []string{``, `,"\u006e":2`, `,"logit_bias":{"1":100},"temperature":0.1`, `,"max_tokens":99999,"stream":false`,
		`,"messag\u0065s":[{"role":"user","content":"shadow"}]`, `,"best_of":3,"n":1,"\u006e":4`, `,"guided_regex":"<a>&"`}
	msgs := `[{"role":"system","content":"you <code> & test ` + strings.Repeat("x", 300) + `"}`
	other := `{"model":"m","messages":[{"role":"user","content":"an unrelated conversation"}]}`
	var bodies []string
	for i, extra := range extras {
		msgs += fmt.Sprintf(` , {"role":"user","content":"step %d"}`, i)
		body := `{"model":"m","messages":` + msgs + " ]" + extra + `}`
		bodies = append(bodies, body)
		if status, out := a.post(t, "/v1/chat/completions", a.bearer(), body); status != 200 {
			t.Fatalf("call %d: status %d: %s", i, status, out)
		}
		if status, out := b.post(t, "/v1/chat/completions", b.bearer(), other); status != 200 {
			t.Fatalf("unrelated call %d: status %d: %s", i, status, out)
		}
		if status, out := b.post(t, "/v1/chat/completions", b.bearer(), body); status != 200 {
			t.Fatalf("call %d alone: status %d: %s", i, status, out)
		}
		msgs += fmt.Sprintf(`,{"role":"assistant","content":"MOCK-REPLY: step %d"}`, i)
	}
	ra, rb := llmA.Requests(), llmB.Requests()
	if len(ra) != len(extras) || len(rb) != 2*len(extras) {
		t.Fatalf("%d and %d engine requests", len(ra), len(rb))
	}
	for i := range ra {
		if !bytes.Equal(ra[i].Body, rb[2*i+1].Body) {
			t.Errorf("call %d: the engine got\n%s\nafter the call before, and\n%s\nalone", i, ra[i].Body, rb[2*i+1].Body)
		}
		if want := generalEngineBody(t, a.Gateway, bodies[i]); !bytes.Equal(ra[i].Body, want) {
			t.Errorf("call %d: the engine got\n%s\nand the general path writes\n%s", i, ra[i].Body, want)
		}
		if got := engineSampling(t, ra[i]); !reflect.DeepEqual(got, pinnedFields) {
			t.Errorf("call %d: the engine got sampling %v, want exactly the pin %v", i, got, pinnedFields)
		}
	}
	ex, err := a.Export()
	if err != nil {
		t.Fatal(err)
	}
	if s := ex.Calls[1].SamplingStripped; len(s) != 0 {
		t.Errorf("call 1 stripped %v: n is dropped, not stripped", s)
	}
	if s := ex.Calls[2].SamplingStripped; !reflect.DeepEqual(s, []string{"logit_bias"}) {
		t.Errorf("call 2 stripped %v, want logit_bias", s)
	}
}

// generalEngineBody is the engine body of an agent's Chat Completions body
// as the general path writes it: decoded whole by encoding/json, written
// in one piece, with g's pin and no cap.
func generalEngineBody(t *testing.T, g *Gateway, agent string) []byte {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(agent), &fields); err != nil {
		t.Fatal(err)
	}
	body, _, err := g.engineBody(fields, 0, g.sampling)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestPrintedMessagesReuse: the print of a request's messages, made after
// another request's (reusing the hashes of the messages that are the
// same), is the print made alone, whatever field of a message differs.
func TestPrintedMessagesReuse(t *testing.T) {
	base := dialect.Message{Role: "assistant", Content: dialect.Text("x"), Reasoning: "r",
		ToolCalls: []dialect.ToolCall{{ID: "1", Name: "f", Arguments: "{}"}}}
	variants := []func(m *dialect.Message){
		func(m *dialect.Message) {},
		func(m *dialect.Message) { m.Role = "user" },
		func(m *dialect.Message) { m.Content = nil },
		func(m *dialect.Message) { m.Content = dialect.Text("") },
		func(m *dialect.Message) { m.Content = dialect.Text("y") },
		func(m *dialect.Message) { m.Parts = []dialect.Part{} },
		func(m *dialect.Message) { m.Parts = []dialect.Part{{Type: "text", Text: "x"}} },
		func(m *dialect.Message) { m.Reasoning = "" },
		func(m *dialect.Message) { m.ToolCalls = nil },
		func(m *dialect.Message) { m.ToolCalls = []dialect.ToolCall{{ID: "1", Name: "f", Arguments: "{ }"}} },
		func(m *dialect.Message) { m.ToolCallID = "t" },
	}
	var h maphash.Hash
	h.SetSeed(printSeed)
	alone := func(msgs []dialect.Message) []uint64 { return hashedAlone(&h, msgs) }
	for i, vi := range variants {
		for j, vj := range variants {
			a, b := base, base
			vi(&a)
			vj(&b)
			var pm printedMessages
			pm.hashAll(&h, []dialect.Message{base, a})
			msgs := []dialect.Message{base, b, a}
			if got, want := pm.hashAll(&h, msgs), alone(msgs); !slices.Equal(got, want) {
				t.Errorf("variant %d after %d: %x, want %x", j, i, got, want)
			}
		}
	}
}

// TestPrintedMessagesShared: messages continued in their array (as
// dialect.Memo continues a conversation's) are printed as alone, by
// hashing only the new ones, and no print made earlier changes; messages
// from the same start but fewer, or in another array (the same, or one
// changed), are printed as alone.
func TestPrintedMessagesShared(t *testing.T) {
	var h maphash.Hash
	h.SetSeed(printSeed)
	alone := func(msgs []dialect.Message) []uint64 { return hashedAlone(&h, msgs) }
	arr := make([]dialect.Message, 0, 64)
	var pm printedMessages
	var prints, kept [][]uint64
	shared := 0
	for i := range 40 {
		var msgs []dialect.Message
		switch {
		case i%7 == 3: // fewer, from the same start
			msgs = arr[: len(arr)/2 : len(arr)/2]
		case i%7 == 5: // the same messages in another array
			msgs = slices.Clone(arr)
		case i%7 == 4: // as many in another array, an early one changed
			msgs = slices.Clone(arr)
			msgs[1].Content = dialect.Text("changed")
		default:
			arr = append(arr, dialect.Message{Role: "user", Content: dialect.Text(fmt.Sprint("m", i))})
			msgs = arr[:len(arr):len(arr)]
		}
		if pm.msgs != nil && len(pm.msgs) <= len(msgs) && &pm.msgs[0] == &msgs[0] {
			shared++
		}
		got := pm.hashAll(&h, msgs)
		if want := alone(msgs); !slices.Equal(got, want) {
			t.Fatalf("print %d: %x, want %x", i, got, want)
		}
		if cap(got) != len(got) {
			t.Fatalf("print %d: room to append to", i)
		}
		prints, kept = append(prints, got), append(kept, slices.Clone(got))
		for j := range prints {
			if !slices.Equal(prints[j], kept[j]) {
				t.Fatalf("after print %d, print %d changed", i, j)
			}
		}
	}
	if shared < 12 {
		t.Fatalf("only %d prints continued the one before in its array", shared)
	}
}

// hashedAlone is the hash of each message, made without a print before.
func hashedAlone(h *maphash.Hash, msgs []dialect.Message) []uint64 {
	out := make([]uint64, len(msgs))
	for i := range msgs {
		out[i] = messageHash(h, &msgs[i])
	}
	return out
}
