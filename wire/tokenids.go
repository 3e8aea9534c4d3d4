package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// CallTokenIDs puts the gateway's llm_response events back together: an
// event whose PromptTokenIDsFrom is above 0 carries only the prompt ids
// after its parent's prompt+completion, and CallTokenIDs keeps, per call
// index, each call's full prompt+completion ids so that its children's can
// be rebuilt. Feed it an episode's gateway llm_responses in any order
// (Add); a call whose parent has not been added yet waits for it. The zero
// value is ready to use; it is not safe for concurrent use.
type CallTokenIDs struct {
	// seq is each resolved call's prompt+completion ids and plen the
	// length of its prompt.
	seq  map[int][]int
	plen map[int]int
	// waiting holds, per missing parent, the calls that wait for it.
	waiting map[int][]*LLMResponse
}

// Add takes one llm_response; events of other kinds, or without token ids,
// are ignored. It reports a call added twice with different ids and a
// delta that does not fit its parent (prompt_token_ids_from beyond the
// parent's ids).
func (c *CallTokenIDs) Add(r *LLMResponse) error {
	if r == nil || r.CallIndex <= 0 || (len(r.PromptTokenIDs) == 0 && len(r.CompletionTokenIDs) == 0 && r.PromptTokenIDsFrom == 0) {
		return nil
	}
	if c.seq == nil {
		c.seq, c.plen, c.waiting = map[int][]int{}, map[int]int{}, map[int][]*LLMResponse{}
	}
	if r.PromptTokenIDsFrom > 0 {
		if _, ok := c.seq[r.ParentCallIndex]; !ok {
			if r.ParentCallIndex <= 0 || r.ParentCallIndex >= r.CallIndex {
				return fmt.Errorf("call %d: prompt_token_ids_from %d without a valid parent_call_index (%d)", r.CallIndex, r.PromptTokenIDsFrom, r.ParentCallIndex)
			}
			c.waiting[r.ParentCallIndex] = append(c.waiting[r.ParentCallIndex], r)
			return nil
		}
	}
	queue := []*LLMResponse{r}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		var prompt []int
		if r.PromptTokenIDsFrom > 0 {
			parent := c.seq[r.ParentCallIndex]
			if r.PromptTokenIDsFrom > len(parent) {
				return fmt.Errorf("call %d: prompt_token_ids_from %d beyond parent call %d's %d ids", r.CallIndex, r.PromptTokenIDsFrom, r.ParentCallIndex, len(parent))
			}
			prompt = append(slices.Clone(parent[:r.PromptTokenIDsFrom]), r.PromptTokenIDs...)
		} else {
			prompt = slices.Clone(r.PromptTokenIDs)
		}
		seq := append(prompt, r.CompletionTokenIDs...)
		if old, ok := c.seq[r.CallIndex]; ok {
			if !slices.Equal(old, seq) || c.plen[r.CallIndex] != len(prompt) {
				return fmt.Errorf("call %d added twice with different token ids", r.CallIndex)
			}
			continue
		}
		c.seq[r.CallIndex], c.plen[r.CallIndex] = seq, len(prompt)
		queue = append(queue, c.waiting[r.CallIndex]...)
		delete(c.waiting, r.CallIndex)
	}
	return nil
}

// AddEvents adds the gateway's llm_responses among events.
func (c *CallTokenIDs) AddEvents(events []Event) error {
	for _, e := range events {
		if r, ok := e.Data.(*LLMResponse); ok && e.Type == EventLLMResponse && e.Origin == OriginGateway {
			if err := c.Add(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Prompt returns call i's full prompt ids, and whether they are known (the
// call and its ancestors were added).
func (c *CallTokenIDs) Prompt(i int) ([]int, bool) {
	s, ok := c.seq[i]
	if !ok {
		return nil, false
	}
	return s[:c.plen[i]:c.plen[i]], true
}

// Completion returns call i's completion ids, and whether they are known.
func (c *CallTokenIDs) Completion(i int) ([]int, bool) {
	s, ok := c.seq[i]
	if !ok {
		return nil, false
	}
	return s[c.plen[i]:], true
}

// Missing returns the parent call indices that calls wait for but that
// were never added (their llm_response was dropped, e.g. by a turn's
// event bound), in increasing order; the export has those calls' ids.
func (c *CallTokenIDs) Missing() []int {
	var out []int
	for p := range c.waiting {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// FullPromptIDs returns, per call index, the full prompt ids of the
// gateway's llm_responses among events, rebuilt from their parents. It
// fails when an event's parent is not among events.
func FullPromptIDs(events []Event) (map[int][]int, error) {
	var c CallTokenIDs
	if err := c.AddEvents(events); err != nil {
		return nil, err
	}
	if m := c.Missing(); len(m) > 0 {
		return nil, fmt.Errorf("the llm_responses of parent calls %v are not among the events", m)
	}
	out := make(map[int][]int, len(c.seq))
	for i := range c.seq {
		out[i], _ = c.Prompt(i)
	}
	return out, nil
}

// CallMessages puts the gateway's llm_request events back together: an
// event whose MessagesFrom is above 0 carries only the messages after
// those of the request it names (MessagesCallIndex), which the gateway
// emitted before it. Feed it an episode's gateway llm_requests (Add); a
// request whose base has not been added yet waits for it. The zero value
// is ready to use; it is not safe for concurrent use.
type CallMessages struct {
	msgs    map[int][]json.RawMessage
	whole   map[int]json.RawMessage // a request's messages as they came, when whole
	waiting map[int][]*LLMRequest
}

// Add takes one llm_request. It reports a delta whose messages are not a
// JSON list or that names a base with fewer messages than it leaves out.
func (c *CallMessages) Add(r *LLMRequest) error {
	if r == nil || r.CallIndex <= 0 {
		return nil
	}
	if c.msgs == nil {
		c.msgs, c.whole, c.waiting = map[int][]json.RawMessage{}, map[int]json.RawMessage{}, map[int][]*LLMRequest{}
	}
	if r.MessagesFrom > 0 {
		if _, ok := c.msgs[r.MessagesCallIndex]; !ok {
			if r.MessagesCallIndex <= 0 || r.MessagesCallIndex == r.CallIndex {
				return fmt.Errorf("call %d: messages_from %d without a valid messages_call_index (%d)", r.CallIndex, r.MessagesFrom, r.MessagesCallIndex)
			}
			c.waiting[r.MessagesCallIndex] = append(c.waiting[r.MessagesCallIndex], r)
			return nil
		}
	}
	queue := []*LLMRequest{r}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		var own []json.RawMessage
		if len(r.Messages) > 0 {
			if err := json.Unmarshal(r.Messages, &own); err != nil {
				if r.MessagesFrom > 0 {
					return fmt.Errorf("call %d: messages after %d: %w", r.CallIndex, r.MessagesFrom, err)
				}
				own = nil // not a list (a Responses input string): kept whole by Messages
			}
		}
		var all []json.RawMessage
		if r.MessagesFrom > 0 {
			base := c.msgs[r.MessagesCallIndex]
			if r.MessagesFrom > len(base) {
				return fmt.Errorf("call %d: messages_from %d beyond call %d's %d messages", r.CallIndex, r.MessagesFrom, r.MessagesCallIndex, len(base))
			}
			all = append(slices.Clone(base[:r.MessagesFrom]), own...)
		} else {
			all = own
			c.whole[r.CallIndex] = r.Messages
		}
		c.msgs[r.CallIndex] = all
		queue = append(queue, c.waiting[r.CallIndex]...)
		delete(c.waiting, r.CallIndex)
	}
	return nil
}

// AddEvents adds the gateway's llm_requests among events.
func (c *CallMessages) AddEvents(events []Event) error {
	for _, e := range events {
		if r, ok := e.Data.(*LLMRequest); ok && e.Type == EventLLMRequest && e.Origin == OriginGateway {
			if err := c.Add(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Messages returns call i's whole conversation as a JSON list, and
// whether it is known (the call and the requests it builds on were added).
func (c *CallMessages) Messages(i int) (json.RawMessage, bool) {
	m, ok := c.msgs[i]
	if !ok {
		return nil, false
	}
	if w, ok := c.whole[i]; ok {
		return w, true
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	return b, true
}

// Missing returns the calls whose llm_requests others build on but that
// were never added, in increasing order.
func (c *CallMessages) Missing() []int {
	var out []int
	for p := range c.waiting {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// RequestDeltas is the producer's side of CallMessages: it turns each
// llm_request it is given, in emission order, into a delta from the one
// given before it when that one's messages are a prefix of its own (the
// same bytes, then a comma and more messages). The zero value is ready to
// use; it is not safe for concurrent use.
type RequestDeltas struct {
	index int
	raw   json.RawMessage // the last request's whole messages
	n     int             // how many they are; ≤ 0: no base for the next
}

// Next makes r, whose Messages are the whole conversation, a delta from the
// request given before (MessagesCallIndex, MessagesFrom) when it can and
// full is false; r becomes the base of the next either way.
func (d *RequestDeltas) Next(r *LLMRequest, full bool) {
	raw, n := r.Messages, -1
	if rest, ok := listAfter(d.raw, raw); ok && d.n > 0 {
		var own []json.RawMessage
		if err := json.Unmarshal(rest, &own); err == nil {
			n = d.n + len(own)
			if !full {
				r.Messages, r.MessagesFrom, r.MessagesCallIndex = rest, d.n, d.index
			}
		}
	}
	if n < 0 {
		var all []json.RawMessage
		if err := json.Unmarshal(raw, &all); err == nil {
			n = len(all)
		}
	}
	d.index, d.raw, d.n = r.CallIndex, raw, n
}

// listAfter returns, when JSON list a is a prefix of JSON list b (b is a's
// bytes without its closing bracket, then a comma and more elements), the
// list of b's elements after a's.
func listAfter(a, b json.RawMessage) (json.RawMessage, bool) {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) < 2 || a[0] != '[' || a[len(a)-1] != ']' || len(b) <= len(a) || b[len(b)-1] != ']' {
		return nil, false
	}
	head := bytes.TrimRight(a[:len(a)-1], " \t\r\n")
	if !bytes.HasPrefix(b, head) {
		return nil, false
	}
	tail := bytes.TrimLeft(b[len(head):], " \t\r\n")
	if len(tail) == 0 || tail[0] != ',' {
		return nil, false
	}
	out := make(json.RawMessage, 0, len(tail))
	return append(append(out, '['), tail[1:]...), true
}
