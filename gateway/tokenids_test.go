package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestTokenIDsDecoding: the reflection-free id list decoder agrees with
// encoding/json on good input and refuses bad input.
func TestTokenIDsDecoding(t *testing.T) {
	for _, good := range []string{`[]`, `null`, `[0]`, `[1,2,3]`, " [ 12 , 7 ,\n 99 ] ", `[151643]`} {
		var fast tokenIDs
		var slow []int
		if err := json.Unmarshal([]byte(good), &fast); err != nil {
			t.Errorf("%s: %v", good, err)
			continue
		}
		json.Unmarshal([]byte(good), &slow)
		if !equalInts(fast, slow) {
			t.Errorf("%s: %v, want %v", good, fast, slow)
		}
	}
	for _, bad := range []string{`[1,,2]`, `[1 2]`, `[1,]`, `[-1]`, `[1.5]`, `["1"]`, `{}`, `[9999999999999]`, `[,]`} {
		var fast tokenIDs
		if err := json.Unmarshal([]byte(bad), &fast); err == nil {
			t.Errorf("%s: no error (%v)", bad, fast)
		}
	}
}

// TestCutMember: removing a top-level member leaves valid JSON that
// decodes to the rest, wherever the member sits.
func TestCutMember(t *testing.T) {
	for _, c := range []struct{ in, value, rest string }{
		{`{"prompt_token_ids":[1,2],"a":1}`, `[1,2]`, `{"a":1}`},
		{`{"a":"x\"}","prompt_token_ids":[3] , "b":{"prompt_token_ids":[9]}}`, `[3]`, `{"a":"x\"}", "b":{"prompt_token_ids":[9]}}`},
		{`{"a":[1,{"b":"]"}], "prompt_token_ids" : null}`, `null`, `{"a":[1,{"b":"]"}]}`},
		{` {"prompt_token_ids":[]} `, `[]`, ` {} `},
	} {
		v, rest, ok, err := cutMember([]byte(c.in), "prompt_token_ids")
		if err != nil || !ok || string(v) != c.value || string(rest) != c.rest || !json.Valid(rest) {
			t.Errorf("%s: %q %q %v %v", c.in, v, rest, ok, err)
		}
	}
	if _, rest, ok, err := cutMember([]byte(`{"a":{"prompt_token_ids":[1]}}`), "prompt_token_ids"); ok || err != nil || string(rest) != `{"a":{"prompt_token_ids":[1]}}` {
		t.Errorf("nested member cut: %q %v %v", rest, ok, err)
	}
	for _, bad := range []string{`[1]`, `{"a":`, `{"a" 1}`, `{"a":"x`, `{"a":[1}`, `{1:2}`, ``} {
		if _, _, ok, err := cutMember([]byte(bad), "prompt_token_ids"); ok || err == nil {
			t.Errorf("%q: ok=%v err=%v", bad, ok, err)
		}
	}
}

// TestIDsMemo: reading an answer's prompt ids after the answer before
// (idsMemo: the ids after the remembered list parsed, the rest copied)
// gives what reading them alone does, on continuations, near-continuations
// and bad lists, and 20,000 mutations of them.
func TestIDsMemo(t *testing.T) {
	nexts := idsNext
	check := func(next string) bool { return checkIDsContinuation(t, idsPrev, next) }
	hits := 0
	for _, next := range nexts {
		if check(next) {
			hits++
		}
	}
	if hits < 2 {
		t.Fatalf("%d continuations taken, want 2", hits)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	junk := []byte("[],0123456789 \n-.\"x")
	hits = 0
	for i := range 20000 {
		b := []byte(nexts[i%len(nexts)])
		for range 1 + rng.IntN(3) {
			p := len(b) - rng.IntN(min(len(b), 8)+1)
			switch rng.IntN(3) {
			case 0:
				b = append(b[:p], append([]byte{junk[rng.IntN(len(junk))]}, b[p:]...)...)
			case 1:
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			case 2:
				b = b[:p]
			}
		}
		if check(string(b)) {
			hits++
		}
	}
	if hits == 0 {
		t.Fatal("no mutation was taken as a continuation")
	}
}

// TestIDsMemoKeepsEarlierIDs: ids read earlier never change when later
// lists continue them (in place) or branch off them, and none has room to
// be appended to.
func TestIDsMemoKeepsEarlierIDs(t *testing.T) {
	var m idsMemo
	lists := []string{"[1,2,3]", "[1,2,3,4,5]", "[1,2,3,4,5,6]", "[1,2,3,4,5,7,8]", "[1,2,3,4,5,6,9]", "[1,2,3,4,5,6,9,10,11,12,13,14,15,16,17]", "[1,2,3,4,5,6,9,10,x]", "[1,2,3,4,5,6,9,10,11,12,13,14,15,16,17,18]"}
	var got, kept [][]int
	for _, l := range lists {
		ids, _, err := m.parse([]byte(l), nil)
		if err != nil {
			continue
		}
		if cap(ids) != len(ids) {
			t.Errorf("%s: capacity %d over length %d", l, cap(ids), len(ids))
		}
		var want tokenIDs
		want.UnmarshalJSON([]byte(l))
		if !equalInts(ids, want) {
			t.Errorf("%s: %v", l, ids)
		}
		got, kept = append(got, ids), append(kept, slices.Clone([]int(ids)))
		for i := range got {
			if !equalInts(got[i], kept[i]) {
				t.Fatalf("after %s, the ids of %s became %v", l, lists[i], got[i])
			}
		}
	}
}

// TestIDsMemoConcurrentContinuations: two answers continuing the same
// ids at once each get their own (one of them is read in full).
func TestIDsMemoConcurrentContinuations(t *testing.T) {
	a := "[" + strings.Repeat("1,", 200) + "1]"
	ends := []string{",7,8]", ",9,10,11]"}
	for range 300 {
		var m idsMemo
		ids, _, _ := m.parse([]byte(a), nil)
		m.keep([]byte(a), append(make([]int, 0, len(ids)+16), ids...)) // room to continue in place
		var wg sync.WaitGroup
		got := make([]tokenIDs, len(ends))
		for i, end := range ends {
			wg.Go(func() { got[i], _, _ = m.parse([]byte(a[:len(a)-1]+end), nil) })
		}
		wg.Wait()
		if h, _, _ := m.claim(); h == nil {
			t.Fatal("nothing remembered")
		}
		if h, ids, _ := m.claim(); h != nil || ids != nil {
			t.Fatalf("%s claimed twice", h)
		}
		for i, end := range ends {
			var want tokenIDs
			want.UnmarshalJSON([]byte(a[:len(a)-1] + end))
			if !equalInts(got[i], want) {
				t.Fatalf("continuation %d: ends %v, want %v", i, got[i][len(got[i])-4:], want[len(want)-4:])
			}
		}
	}
}

// TestReadAllSized: a body is read whole whatever length it declares.
func TestReadAllSized(t *testing.T) {
	body := strings.Repeat("x", 3000)
	for _, n := range []int64{-1, 0, 1, 2999, 3000, 3001, 1 << 40} {
		got, err := readAllSized(strings.NewReader(body), n)
		if err != nil || string(got) != body {
			t.Errorf("declared %d: %d bytes, %v", n, len(got), err)
		}
	}
}

// idsPrev is the list the idsMemo tests continue; idsNext are lists after
// it: continuations, near-continuations and bad lists.
const idsPrev = "[ 151644, 8948,\n 198 , 2610 ]"

var idsNext = []string{
	"[ 151644, 8948,\n 198 , 2610 ,7,8]", "[ 151644, 8948,\n 198 , 2610\t,\n7 ]", "[ 151644, 8948,\n 198 , 2610,]",
	"[ 151644, 8948,\n 198 , 2610,,7]", "[ 151644, 8948,\n 198 , 2610, ]", "[ 151644, 8948,\n 198 , 2610 7]",
	"[ 151644, 8948,\n 198 , 26107]", "[ 151644, 8948,\n 198 , 2610,-1]", "[ 151644, 8948,\n 198 , 2610,1.5]",
	"[ 151644, 8948,\n 198 , 2610,9999999999999]", "[ 151644, 8948,\n 198 , 2610,\"7\"]", "[ 151644, 8948,\n 198 , 2610,7",
	"[ 151644, 8948,\n 198 , 2610]", "[ 151644, 8948,\n 198 ]", "[ 151644, 8948,\n 198 , 2610,[7]]", "null", "[]", "",
	"[ 151644, 8948,\n 198 , 2610,7] x", "[ 151644, 8948,\n 198 , 2610,7]]",
}

// checkIDsContinuation reads next after prev with one memo and alone, and
// fails when the two differ (ids or error); it reports whether the memo
// took next as a continuation.
func checkIDsContinuation(t *testing.T, prev, next string) bool {
	t.Helper()
	var m idsMemo
	if _, _, err := m.parse([]byte(prev), nil); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	_, hit := continuedIDs(bytes.TrimSpace([]byte(next)), m.head, slices.Clone(m.ids))
	m.mu.Unlock()
	got, _, gerr := m.parse([]byte(next), nil)
	var want tokenIDs
	werr := want.UnmarshalJSON([]byte(next))
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) || !equalInts(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("%q after %q: %v (%v), alone %v (%v)", next, prev, got, gerr, want, werr)
	}
	return hit
}

// FuzzIDsMemo feeds arbitrary lists after idsPrev to an idsMemo: the ids
// must be what reading them alone gives.
// Run: go test -run '^$' -fuzz=FuzzIDsMemo -fuzztime=30s ./gateway
func FuzzIDsMemo(f *testing.F) {
	for _, s := range idsNext {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) { checkIDsContinuation(t, idsPrev, next) })
}

// slowBody is a request body that sends one byte per Read.
type slowBody struct {
	sent  int
	limit int
}

// Read sends one byte per call up to limit, then io.EOF.
func (s *slowBody) Read(p []byte) (int, error) {
	if s.sent >= s.limit {
		return 0, io.EOF
	}
	p[0] = 'x'
	s.sent++
	return 1, nil
}

// TestReadAllSizedDoesNotTrustTheLength: the declared Content-Length is
// the agent's word. A body that declares 4 MiB and sends 10 bytes is read
// into a buffer of at most firstRead (64 KiB), not 4 MiB; one that sends
// what it declares is read into one buffer of that size plus one byte
// (the positive control: the sizing still happens for honest bodies).
func TestReadAllSizedDoesNotTrustTheLength(t *testing.T) {
	got, err := readAllSized(&slowBody{limit: 10}, 4<<20)
	if err != nil || len(got) != 10 || cap(got) > firstRead {
		t.Fatalf("a 10-byte body declaring 4 MiB: %d bytes in a buffer of %d, %v", len(got), cap(got), err)
	}
	honest := strings.Repeat("y", 3<<20)
	got, err = readAllSized(strings.NewReader(honest), int64(len(honest)))
	if err != nil || string(got) != honest || cap(got) != len(honest)+1 {
		t.Fatalf("an honest 3 MiB body: %d bytes in a buffer of %d, %v", len(got), cap(got), err)
	}
	allocs := testing.AllocsPerRun(5, func() { readAllSized(strings.NewReader(honest), int64(len(honest))) })
	if allocs > 8 {
		t.Fatalf("an honest 3 MiB body took %.0f allocations: it is regrown from small", allocs)
	}
}

// TestIDsMemoLendsBuffers: the buffer the memo lends for the next answer
// is one nobody reads any more: overwriting every lent buffer at once and
// reading the next answer into it, at another offset, leaves each
// continuation read as one (in place) and right; a buffer over maxSpare is
// not kept.
func TestIDsMemoLendsBuffers(t *testing.T) {
	var m idsMemo
	list := "[1"
	var prev tokenIDs
	lent, continued := 0, 0
	for i := range 50 {
		list += fmt.Sprintf(",%d", i)
		buf := m.buffer()
		if buf != nil {
			lent++
		}
		// Each answer's list at another offset of its buffer than the one before.
		raw, err := readInto(buf, strings.NewReader(strings.Repeat(" ", i%3)+list+"]"), -1)
		if err != nil {
			t.Fatal(err)
		}
		inPlace := len(m.ids) > 0 && cap(m.ids) > len(m.ids) // room for the new id
		ids, kept, err := m.parse(raw, raw)
		if err != nil || !kept {
			t.Fatalf("call %d: %v, kept %v", i, err, kept)
		}
		var want tokenIDs
		want.UnmarshalJSON(raw)
		if !equalInts(ids, want) {
			t.Fatalf("call %d: ids %v, want %v", i, ids, want)
		}
		if inPlace && &ids[0] != &prev[0] {
			t.Fatalf("call %d: not continued in place", i)
		}
		if inPlace {
			continued++
		}
		prev = ids
		if b := m.buffer(); b != nil { // overwritten at once: nobody may read it
			copy(b[:cap(b)], bytes.Repeat([]byte("x"), cap(b)))
			m.release(b)
		}
	}
	if lent < 40 || continued < 20 {
		t.Fatalf("of 50 answers, %d were read into a lent buffer and %d continued in place", lent, continued)
	}
	m.release(make([]byte, 0, maxSpare+1))
	if b := m.buffer(); cap(b) > maxSpare {
		t.Fatalf("a buffer of %d bytes kept", cap(b))
	}
}
