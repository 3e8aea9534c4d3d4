package dialect

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// memoPrev is the request a continuation follows; memoNext are requests
// after it: continuations, near-continuations and hostile ones.
var memoPrev = `{"model":"m","messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"} ],"tools":[{"type":"function","function":{"name":"f"}}],"temperature":0.6}`

var memoNext = []string{
	`{"model":"m","messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"} ,{"role":"assistant","content":"ok"},{"role":"user","content":"more"}],"tools":[{"type":"function","function":{"name":"f"}}],"temperature":0.6}`,
	`{"model":"m","messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"}` + "\n\t,\n" + `{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"x"}]}  ]  }`,
	// escaped names: n, and a second messages
	`{"\u006e":3,"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"messag\u0065s":[{"role":"user","content":"other"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"messages":[{"role":"user","content":"other"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"logit_bias":{"1":100},"n":2,"n":1}`,
	// malformed after the head
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},,{"role":"user"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},null]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},5]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"content":"no role"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}]`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}]}x`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}]}{}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x` + "\x01" + `"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"\xff\xfe"}],"\xff":1}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"model":5}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"stream":"yes"}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"tools":{}}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"temperature":tru}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x"}],"temperature":01}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x","x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"},{"role":"user","content":"x","x":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}]}`,
	// not continuations: another element boundary, a changed message, a prefix
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"}x,{"role":"user"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}!"},{"role":"user","content":"x"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}, {"role":"user","content":"a]\"}"}]}`,
	`{"messages":[{"role":"system","content":"be <careful> & \u2028 good"}]}`,
	`{}`, `[]`, `null`, ``,
}

// decodeResult is everything a decode yields: the request, the error and
// the translator's state.
type decodeResult struct {
	Req                  *Request
	Err                  string
	Model                string
	Stream, IncludeUsage bool
}

func decodeWithMemo(m *Memo, body string) decodeResult {
	t := &chatTranslator{memo: m}
	req, err := t.Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(body))
	res := decodeResult{Req: req, Model: t.model, Stream: t.stream, IncludeUsage: t.includeUsage}
	if err != nil {
		res.Err = err.Error()
	}
	return res
}

// checkContinuation decodes next after prev with one memo and alone with
// another, and fails when the two differ, or when a compacted messages
// list is not what encoding/json writes. It reports whether the fast
// decode took next.
func checkContinuation(t *testing.T, prev, next string) bool {
	t.Helper()
	var m Memo
	decodeWithMemo(&m, prev)
	_, _, err := continued([]byte(next), m.last)
	got := decodeWithMemo(&m, next)
	want := decodeWithMemo(&Memo{}, next)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after %q, %q decodes otherwise than alone:\n got %+v\nwant %+v", prev, next, got, want)
	}
	if got.Req != nil {
		c, err := json.Marshal(got.Req.Messages)
		if open := got.Req.Chat.CompactMessages(); err != nil || string(c) != string(open)+"]" {
			t.Fatalf("%q: compacted messages %s], want %s (%v)", next, open, c, err)
		}
	}
	return err == nil
}

// TestMemoDecode checks that decoding a request as the continuation of
// the one before gives what decoding it alone does, on continuations and
// hostile near-continuations and 20,000 mutations of them.
func TestMemoDecode(t *testing.T) {
	var short []string // the seeds but the deeply nested ones, which the seeds alone cover
	for _, s := range memoNext {
		if len(s) < 5000 {
			short = append(short, s)
		}
	}
	// Most mutations land near the end, after the remembered head.
	checkMemo(t, memoNext, short, 3, 120, rand.New(rand.NewPCG(3, 4)),
		func(next string) bool { return checkContinuation(t, memoPrev, next) })
}

// checkMemo runs check (true: the memo's path took it) on each seed and
// on 20,000 mutations of the mutable ones (within their last near bytes;
// 0: anywhere): at least minHits seeds and one mutation must take the
// memo's path.
func checkMemo(t *testing.T, seeds, mutable []string, minHits, near int, rng *rand.Rand, check func(next string) bool) {
	t.Helper()
	hits := 0
	for _, next := range seeds {
		if check(next) {
			hits++
		}
	}
	if hits < minHits {
		t.Fatalf("the memo's decode took %d of the requests, want at least %d", hits, minHits)
	}
	hits = 0
	for i := range 20000 {
		if check(string(mutated(rng, []byte(mutable[i%len(mutable)]), near))) {
			hits++
		}
	}
	t.Logf("the memo's decode took %d of 20,000 mutations", hits)
	if hits == 0 {
		t.Fatal("the memo's decode took none of the mutations")
	}
}

// TestMemoConversation decodes a growing conversation with one memo: each
// request's result is what decoding it alone gives.
func TestMemoConversation(t *testing.T) {
	var m Memo
	msgs := []any{map[string]any{"role": "system", "content": "s"}}
	for i := range 50 {
		msgs = append(msgs, map[string]any{"role": "user", "content": strings.Repeat("x<", i)})
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "stream": i%2 == 0, "stream_options": map[string]any{"include_usage": true}})
		got, want := decodeWithMemo(&m, string(body)), decodeWithMemo(&Memo{}, string(body))
		if !reflect.DeepEqual(got, want) || got.Err != "" {
			t.Fatalf("call %d: got %+v, want %+v", i, got, want)
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "ok", "tool_calls": []any{map[string]any{"id": "c", "function": map[string]any{"name": "f", "arguments": "{}"}}}})
	}
}

// FuzzMemoDecode feeds arbitrary continuations of memoPrev to a memo's
// decode: the result must be what decoding them alone gives.
// Run: go test -fuzz=FuzzMemoDecode -fuzztime=30s ./gateway/dialect
func FuzzMemoDecode(f *testing.F) {
	for _, s := range memoNext {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) { checkContinuation(t, memoPrev, next) })
}

// TestMemoKeepsEarlierRequests: the messages and compacted list a request
// got never change when later requests continue them in place, branch off
// them or fail after the continued decode, and none has room to be
// appended to; and continuations of the same request decoded at once each
// get their own.
func TestMemoKeepsEarlierRequests(t *testing.T) {
	var m Memo
	type kept struct {
		body string
		req  *Request
		msgs []Message
		open string
	}
	var all []kept
	msgs := `[{"role":"system","content":"s"}`
	shared := 0
	for i := range 40 {
		body := `{"model":"m","messages":` + msgs + `]}`
		switch i % 5 {
		case 3: // a branch: the request before's messages and another
			body = `{"model":"m","messages":` + msgs + `,{"role":"user","content":"branch ` + strings.Repeat("b", i) + `"}]}`
		case 4: // a continuation that fails after its messages are read
			body = `{"model":5,"messages":` + msgs + `,{"role":"user","content":"bad"}]}`
		}
		got := decodeWithMemo(&m, body)
		if got.Req != nil {
			r := &got.Req.Chat
			if cap(r.Messages) != len(r.Messages) || cap(r.CompactMessages()) != len(r.CompactMessages()) {
				t.Fatalf("call %d: room to append to", i)
			}
			if n := len(all); n > 0 && len(all[n-1].req.Chat.Messages) > 0 && &all[n-1].req.Chat.Messages[0] == &r.Messages[0] {
				shared++
			}
			all = append(all, kept{body, got.Req, slices.Clone(r.Messages), string(r.CompactMessages())})
		}
		for _, k := range all {
			if !reflect.DeepEqual(k.req.Chat.Messages, k.msgs) || string(k.req.Chat.CompactMessages()) != k.open {
				t.Fatalf("after call %d, the request %s changed", i, k.body)
			}
		}
		if i%5 < 3 {
			msgs += fmt.Sprintf(`,{"role":"user","content":"step %d"},{"role":"assistant","content":"ok %d"}`, i, i)
		}
	}
	if shared < 10 {
		t.Fatalf("only %d requests shared the messages of the one before: the test does not exercise sharing", shared)
	}
	for _, k := range all {
		want := decodeWithMemo(&Memo{}, k.body)
		if !reflect.DeepEqual(k.req.Chat.Messages, want.Req.Chat.Messages) || k.open != string(want.Req.Chat.CompactMessages()) {
			t.Fatalf("%s: decoded otherwise than alone", k.body)
		}
	}
}

// TestMemoConcurrentContinuations: requests continuing the same one at
// once each decode as alone.
func TestMemoConcurrentContinuations(t *testing.T) {
	prev := `{"messages":[{"role":"system","content":"` + strings.Repeat("s", 200) + `"}]}`
	for range 200 {
		var m Memo
		decodeWithMemo(&m, prev)
		decodeWithMemo(&m, prev[:len(prev)-2]+`,{"role":"user","content":"room"}]}`) // the arrays now have room
		base := prev[:len(prev)-2] + `,{"role":"user","content":"room"}`
		var wg sync.WaitGroup
		got := make([]decodeResult, 3)
		bodies := make([]string, 3)
		for i := range got {
			bodies[i] = base + fmt.Sprintf(`,{"role":"user","content":"next %d"}]}`, i)
			wg.Go(func() { got[i] = decodeWithMemo(&m, bodies[i]) })
		}
		wg.Wait()
		for i := range got {
			if want := decodeWithMemo(&Memo{}, bodies[i]); !reflect.DeepEqual(got[i], want) {
				t.Fatalf("continuation %d: %+v, want %+v", i, got[i].Req.Chat.Messages, want.Req.Chat.Messages)
			}
		}
	}
}

// mutated returns b with one to three bytes inserted, removed or cut off
// at, within the last near bytes (0: anywhere).
func mutated(rng *rand.Rand, b []byte, near int) []byte {
	junk := []byte(`{}[]",:0123456789-.etrufalsn\\u ` + "\x00\xff")
	for range 1 + rng.IntN(3) {
		p := len(b)
		switch {
		case len(b) > 0 && near > 0:
			p = len(b) - rng.IntN(min(len(b), near))
		case len(b) > 0:
			p = rng.IntN(len(b))
		}
		switch rng.IntN(3) {
		case 0:
			b = append(b[:p], append([]byte{junk[rng.IntN(len(junk))]}, b[p:]...)...)
		case 1:
			if p < len(b) {
				b = append(b[:p], b[p+1:]...)
			}
		case 2:
			if rng.IntN(4) == 0 {
				b = b[:p]
			}
		}
	}
	return b
}
