package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// TestEventDeltasRebuildTheEngineIDs is a property test of the events as
// deltas: random episodes against the fake engine — a growing
// conversation, branches (an earlier state of a conversation sent again),
// breaks (a new conversation), bursts of concurrent calls, and a switch to
// full ids half way — whose llm_responses, rebuilt by wire.CallTokenIDs,
// carry exactly each engine call's prompt and completion ids, and whose
// llm_requests, rebuilt by wire.CallMessages, exactly the conversations
// sent; most calls were sent as deltas, none after the switch.
func TestEventDeltasRebuildTheEngineIDs(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			llm := engine(t, fakellm.Options{})
			g := startGateway(t, llm.URL(), Options{})
			rng := rand.New(rand.NewPCG(seed, 28))
			var mu sync.Mutex
			var sent []string // each call's conversation, compacted
			convs := [][]json.RawMessage{nil}
			var states [][]json.RawMessage // earlier states, for branches
			n := 0
			// call sends conversation c plus a new user message and returns
			// the conversation with the answer.
			call := func(c []json.RawMessage, text string) []json.RawMessage {
				u, _ := json.Marshal(user(text))
				msgs := append(slices.Clone(c), u)
				list, _ := json.Marshal(msgs)
				status, body := g.post(t, "/v1/chat/completions", g.bearer(), map[string]any{"model": "m", "messages": json.RawMessage(list), "tools": addTools})
				if status != http.StatusOK {
					t.Errorf("status %d: %s", status, body)
					return msgs
				}
				var a struct {
					Choices []struct {
						Message json.RawMessage `json:"message"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(body, &a); err != nil || len(a.Choices) == 0 {
					t.Errorf("answer %s: %v", body, err)
					return msgs
				}
				var cmp bytes.Buffer
				json.Compact(&cmp, list)
				mu.Lock()
				sent = append(sent, cmp.String())
				mu.Unlock()
				return append(msgs, a.Choices[0].Message)
			}
			const calls = 60
			switched := 0
			for n < calls {
				if n >= calls/2 && switched == 0 {
					g.SetFullTokenIDs(true)
					switched = n
				}
				n++
				text := fmt.Sprintf("call %d: fix the bug in module %d", n, rng.IntN(1000))
				switch r := rng.IntN(10); {
				case r < 6 || len(states) == 0: // the conversation goes on
					states = append(states, convs[0])
					convs[0] = call(convs[0], text)
				case r < 7: // a branch: an earlier state again
					convs[0] = call(states[rng.IntN(len(states))], text)
				case r < 8: // a break: a new conversation
					convs = append([][]json.RawMessage{nil}, convs...)
					convs[0] = call(nil, text)
				default: // concurrent calls continuing the last conversations
					k := min(len(convs), 3)
					var wg sync.WaitGroup
					for j := range k {
						wg.Go(func() { convs[j] = call(convs[j], fmt.Sprintf("%s (%d)", text, j)) })
					}
					wg.Wait()
					n += k - 1
				}
			}
			evs := g.events.list()
			var ids wire.CallTokenIDs
			var msgs wire.CallMessages
			if err := ids.AddEvents(evs); err != nil {
				t.Fatal(err)
			}
			if err := msgs.AddEvents(evs); err != nil {
				t.Fatal(err)
			}
			if m, mm := ids.Missing(), msgs.Missing(); len(m)+len(mm) > 0 {
				t.Fatalf("bases never emitted: ids %v, messages %v", m, mm)
			}
			// Every engine call's ids are one call's rebuilt ids.
			want := map[string]int{}
			for _, e := range llm.Requests() {
				p, c, ok := e.EngineTokenIDs()
				if !ok {
					t.Fatalf("engine entry %d without ids", e.Seq)
				}
				want[fmt.Sprint(p, c)]++
			}
			got := map[string]int{}
			wantMsgs := map[string]int{}
			for _, s := range sent {
				wantMsgs[s]++
			}
			gotMsgs := map[string]int{}
			idDeltas, msgDeltas, late := 0, 0, 0
			for _, e := range evs {
				switch d := e.Data.(type) {
				case *wire.LLMResponse:
					p, ok1 := ids.Prompt(d.CallIndex)
					c, ok2 := ids.Completion(d.CallIndex)
					if !ok1 || !ok2 {
						t.Fatalf("call %d not rebuilt", d.CallIndex)
					}
					got[fmt.Sprint(p, c)]++
					if d.PromptTokenIDsFrom > 0 {
						idDeltas++
						if d.CallIndex > switched {
							late++
						}
					}
				case *wire.LLMRequest:
					m, ok := msgs.Messages(d.CallIndex)
					var cmp bytes.Buffer
					if !ok || json.Compact(&cmp, m) != nil {
						t.Fatalf("call %d's messages not rebuilt", d.CallIndex)
					}
					gotMsgs[cmp.String()]++
					if d.MessagesFrom > 0 {
						msgDeltas++
						if d.CallIndex > switched {
							late++
						}
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the rebuilt ids are not the engine's")
			}
			if fmt.Sprint(gotMsgs) != fmt.Sprint(wantMsgs) {
				t.Errorf("the rebuilt conversations are not those sent")
			}
			if idDeltas < switched/3 || msgDeltas < switched/3 || late > 0 {
				t.Errorf("of %d calls before full ids, %d sent prompt ids and %d messages as deltas; %d deltas after the switch", switched, idDeltas, msgDeltas, late)
			}
			t.Logf("%d calls, %d id deltas, %d message deltas before full ids at call %d", n, idDeltas, msgDeltas, switched)
		})
	}
}
