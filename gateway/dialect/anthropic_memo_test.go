package dialect

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// anthropicPrev is the request an Anthropic continuation follows, as
// Claude Code sends it (the cache_control marker on its last message);
// anthropicNext are requests after it: continuations that move the
// marker, near-continuations and hostile ones.
var anthropicPrev = `{"model":"claude","system":[{"type":"text","text":"be <careful> & good","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a]\"}"}]},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"3","cache_control":{"type":"ephemeral"}}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"max_tokens":100,"stream":true}`

var anthropicNext = []string{
	// the marker moved to a new last message
	`{"model":"claude","system":[{"type":"text","text":"be <careful> & good","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"a]\"}"}]},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"3"}]},{"role":"assistant","content":"done"},{"role":"user","content":[{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"max_tokens":100,"stream":true}`,
	// the same with space between the messages, another system, no tools
	`{"model":"claude","system":"other" , "messages":[ {"role":"user","content":[{"type":"text","text":"a]\"}"}]} ,{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},` + "\n" + `{"role":"user","content":"x"} ] }`,
	// an early message changed, one removed, the messages reordered
	`{"model":"claude","messages":[{"role":"user","content":[{"type":"text","text":"b]\"}"}]},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]}]}`,
	`{"model":"claude","messages":[{"role":"user","content":[{"type":"text","text":"a]\"}"}]}]}`,
	`{"model":"claude","messages":[{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"text","text":"a]\"}"}]}]}`,
	// a message that is the remembered one and more
	`{"model":"claude","messages":[{"role":"user","content":[{"type":"text","text":"a]\"}"}]}{"x":1},{"role":"user","content":"y"}]}`,
	`{"model":"claude","messages":[{"role":"user","content":[{"type":"text","text":"a]\"}"}]}x,{"role":"user","content":"y"}]}`,
	// other spellings, duplicates, types the typed decode rejects
	`{"MODEL":"x","messages":[{"role":"user","content":"y"}]}`,
	`{"model":"claude","Messages":[{"role":"user","content":"y"}],"messages":[{"role":"user","content":"z"}]}`,
	`{"model":"claude","ſtream":true,"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"claude","messages":[{"role":"user","content":"y"}],"messages":[{"role":"user","content":"z"}]}`,
	`{"model":5,"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"claude","stream":"yes","messages":[{"role":"user","content":"y"}]}`,
	`{"model":"claude","stream":null,"system":null,"tools":null,"messages":[{"role":"user","content":"y"}]}`,
	// malformed messages and elements
	`{"model":"claude","messages":[]}`,
	`{"model":"claude","messages":{}}`,
	`{"model":"claude","messages":[null]}`,
	`{"model":"claude","messages":[5]}`,
	`{"model":"claude","messages":[{"role":"user","content":"y"},]}`,
	`{"model":"claude","messages":[{"role":"user","content":"y"}`,
	`{"model":"claude","messages":[{"role":"robot","content":"y"}]}`,
	`{"model":"claude","messages":[{"ROLE":"user","role":"assistant","content":"y"}]}`,
	`{"model":"claude","messages":[{"role":"user","content":5}]}`,
	`{"model":"claude","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]}]}`,
	`{"model":"claude","messages":[{"role":"user","content":"y` + "\x01" + `"}]}`,
	`{"model":"claude","messages":[{"role":"user","content":"\xff"}]}`,
	`{"model":"claude","system":[{"type":"text","text":5}],"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"claude","tools":[{"name":5}],"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"claude","messages":[{"role":"user","content":"y"}]}x`,
	`{"model":"claude","messages":[{"role":"user","content":"y"}],"temperature":tru}`,
	`{}`, `[]`, `null`, ``,
}

// decodeAnthropic decodes body with a translator using memo m (nil: none).
func decodeAnthropic(m *Memo, body string) decodeResult {
	t := &anthropicTranslator{memo: m}
	req, err := t.Decode(httptest.NewRequest("POST", "/v1/messages", nil), []byte(body))
	res := decodeResult{Req: req, Model: t.model, Stream: t.stream}
	if err != nil {
		res.Err = err.Error()
	}
	return res
}

// checkAnthropicContinuation decodes next after prev with one memo and
// alone without one, and fails when the two differ (but for the compacted
// messages, which only the split decode knows: they must be what
// encoding/json writes). It reports whether the split decode took next.
func checkAnthropicContinuation(t *testing.T, prev, next string) bool {
	t.Helper()
	var m Memo
	decodeAnthropic(&m, prev)
	_, hit := (&anthropicTranslator{memo: &Memo{anth: m.anth}}).decodeContinued([]byte(next))
	got, want := decodeAnthropic(&m, next), decodeAnthropic(nil, next)
	if got.Req != nil {
		open := got.Req.Chat.CompactMessages()
		c, err := json.Marshal(got.Req.Chat.Messages)
		if open != nil && (err != nil || string(c) != string(open)+"]") {
			t.Fatalf("%q: compacted messages %s], want %s (%v)", next, open, c, err)
		}
		got.Req.Chat.compactOpen = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after %q, %q decodes otherwise than alone:\n got %+v\nwant %+v", prev, next, got, want)
	}
	return hit == nil
}

// TestAnthropicMemoDecode checks that decoding an Anthropic request by its
// messages, after another, gives what decoding it alone does, on
// continuations, hostile near-continuations and 20,000 mutations of them.
func TestAnthropicMemoDecode(t *testing.T) {
	checkMemo(t, anthropicNext, anthropicNext, 5, 0, rand.New(rand.NewPCG(5, 6)),
		func(next string) bool { return checkAnthropicContinuation(t, anthropicPrev, next) })
}

// TestAnthropicMemoConversation decodes a growing conversation whose
// cache_control marker moves every turn with one memo: each request
// decodes as alone, and all but the first reuse every earlier message.
func TestAnthropicMemoConversation(t *testing.T) {
	var m Memo
	var msgs []string
	for i := range 40 {
		if i > 0 {
			msgs[len(msgs)-1] = strings.Replace(msgs[len(msgs)-1], `,"cache_control":{"type":"ephemeral"}`, "", 1)
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"ok <%d>"}]}`, i))
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"step %d & more","cache_control":{"type":"ephemeral"}}]}`, i))
		body := `{"model":"claude","system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[` + strings.Join(msgs, ",") + `],"max_tokens":9}`
		before := m.anth
		got, want := decodeAnthropic(&m, body), decodeAnthropic(nil, body)
		if got.Err != "" || got.Req.Chat.CompactMessages() == nil {
			t.Fatalf("call %d: %v, compacted %q", i, got.Err, got.Req.Chat.CompactMessages())
		}
		got.Req.Chat.compactOpen = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: got %+v, want %+v", i, got, want)
		}
		for k := range max(0, len(msgs)-3) { // all but the marker's old and new places and the answer
			if &m.anth.elems[k].msgs[0] != &before.elems[k].msgs[0] {
				t.Fatalf("call %d: message %d decoded again", i, k)
			}
		}
	}
}

// FuzzAnthropicMemoDecode feeds arbitrary requests after anthropicPrev to
// a memo's decode: the result must be what decoding them alone gives.
// Run: go test -fuzz=FuzzAnthropicMemoDecode -fuzztime=30s ./gateway/dialect
func FuzzAnthropicMemoDecode(f *testing.F) {
	for _, s := range anthropicNext {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) { checkAnthropicContinuation(t, anthropicPrev, next) })
}
