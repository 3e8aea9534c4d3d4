package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"unicode/utf8"

	"github.com/harnessd/harnessd/internal/jsonscan"
)

// Memo keeps what decoding one Chat Completions request learnt of its
// messages, so that the next request of the same conversation, whose
// messages list is the same bytes followed by new messages (an agent's
// next turn), is decoded by reading only the new ones: the old ones were
// validated, decoded and compacted already. A request that is not such a
// continuation is decoded in full, as without a Memo, and becomes the one
// remembered. The result is the same either way (TestMemoDecode).
//
// A continuation's compacted list and decoded messages are the remembered
// ones with the new appended in place where their arrays have room: the
// calls of a conversation share them, and what a request holds is never
// written (only past the longest view, by the one decode that took the
// entry; TestMemoKeepsEarlierRequests).
//
// The zero value is ready to use; it is safe for concurrent use. Give one
// to a Chat Completions translator with UseMemo.
type Memo struct {
	mu   sync.Mutex
	last memoEntry
	// anth is the last Anthropic Messages request (anthropic_memo.go).
	anth anthropicEntry
}

// memoEntry is a request's messages list: as sent without its closing
// bracket and the space before it (head), compacted as encoding/json
// writes a json.RawMessage without its closing bracket (open), and decoded
// (msgs). open and msgs may have room past their length, which only the
// decode that took the entry (take) may write.
type memoEntry struct {
	head, open []byte
	msgs       []Message
}

// take returns the remembered entry and forgets it: until the taker keeps
// another, nobody else may append to its arrays.
func (m *Memo) take() memoEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.last
	m.last = memoEntry{}
	return e
}

func (m *Memo) keep(raw, open []byte, msgs []Message) {
	head := bytes.TrimRight(raw[:len(raw)-1], " \t\r\n")
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = memoEntry{head: head, open: open, msgs: msgs}
}

// Memoizer is a translator that can decode with a Memo.
type Memoizer interface {
	// UseMemo makes the translator's Decode read and update m.
	UseMemo(m *Memo)
}

// UseMemo implements Memoizer.
func (t *chatTranslator) UseMemo(m *Memo) { t.memo = m }

// errMiss says the fast decode cannot be used; the full decode decides.
var errMiss = errors.New("not a continuation")

// continued decodes body as a continuation of the remembered request:
// its top-level members are split without a decoder (each but messages
// checked with json.Valid), and of messages only the part after the
// remembered head is read. Any doubt (a miss, a duplicate member, a
// value that is not valid JSON, a member the full decode would reject) is
// an error, and the full decode then decides.
func continued(body []byte, last memoEntry) (map[string]json.RawMessage, *ChatRequest, error) {
	if len(last.head) < 2 {
		return nil, nil, errMiss
	}
	var tail []byte // the new messages, as a list
	fields, err := splitMembers(body, "messages", func(i int) (end int, err error) {
		end, tail, err = continuedList(body, i, last.head)
		return end, err
	})
	if err != nil || tail == nil {
		return nil, nil, errMiss
	}
	added, err := chatMessages(tail) // one at a time: a bad one misses at once
	if err != nil {
		return nil, nil, errMiss
	}
	compactTail, err := json.Marshal(json.RawMessage(tail))
	if err != nil {
		return nil, nil, errMiss
	}
	msgs := append(last.msgs, added...)
	open := append(append(last.open, ','), compactTail[1:len(compactTail)-1]...)
	return fields, &ChatRequest{Messages: msgs, compactOpen: open}, nil
}

// splitMembers splits the JSON object body into its members without a
// decoder: the member named list is read by readList (given the index of
// its value, it returns the index after it), every other value is checked
// with json.Valid. A duplicate member, trailing data or anything else in
// doubt is errMiss.
func splitMembers(body []byte, list string, readList func(i int) (int, error)) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, errMiss
	}
	i = skipSpace(body, i+1)
	for first := true; ; first = false {
		if i < len(body) && body[i] == '}' && first {
			break
		}
		key, j, err := memberKey(body, i)
		if err != nil {
			return nil, err
		}
		if _, dup := fields[key]; dup {
			return nil, errMiss
		}
		valStart := skipSpace(body, j)
		var valEnd int
		if key == list {
			valEnd, err = readList(valStart)
		} else {
			valEnd, err = skipValue(body, valStart)
			if err == nil && !json.Valid(body[valStart:valEnd]) {
				err = errMiss
			}
		}
		if err != nil {
			return nil, err
		}
		fields[key] = body[valStart:valEnd:valEnd]
		i = skipSpace(body, valEnd)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
			continue
		}
		if i < len(body) && body[i] == '}' {
			break
		}
		return nil, errMiss
	}
	if skipSpace(body, i+1) != len(body) {
		return nil, errMiss
	}
	return fields, nil
}

// memberKey reads the object member name at body[i] and the colon after
// it, returning the name (unescaped as encoding/json does) and the index
// after the colon.
func memberKey(body []byte, i int) (string, int, error) {
	if i >= len(body) || body[i] != '"' {
		return "", 0, errMiss
	}
	end, err := skipString(body, i)
	if err != nil {
		return "", 0, errMiss
	}
	raw := body[i:end]
	key := ""
	if plainASCII(raw[1 : len(raw)-1]) {
		key = string(raw[1 : len(raw)-1])
	} else if json.Unmarshal(raw, &key) != nil {
		return "", 0, errMiss
	}
	j := skipSpace(body, end)
	if j >= len(body) || body[j] != ':' {
		return "", 0, errMiss
	}
	return key, j + 1, nil
}

// plainASCII reports whether a string's inner bytes are printable ASCII
// without escapes: the string is these bytes.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// continuedList reads the messages list at body[i] when it is the
// remembered head, a comma and more messages: it returns the index after
// the list and the new messages as a list of their own.
func continuedList(body []byte, i int, head []byte) (int, []byte, error) {
	if !bytes.HasPrefix(body[i:], head) {
		return 0, nil, errMiss
	}
	j := skipSpace(body, i+len(head))
	if j >= len(body) || body[j] != ',' {
		return 0, nil, errMiss
	}
	end, err := skipValue(body, j) // the new messages and the closing bracket, scanned as one list
	if err != nil || body[end-1] != ']' {
		return 0, nil, errMiss
	}
	tail := make([]byte, 0, end-j)
	tail = append(append(tail, '['), body[j+1:end]...)
	return end, tail, nil
}

func skipSpace(b []byte, i int) int { return jsonscan.Space(b, i) }

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) { return found(jsonscan.String(b, i)) }

// maxNesting bounds the nesting of a value the fast decode reads: deeper
// ones go to encoding/json, which has its own bound.
const maxNesting = 1000

// skipValue returns the index after the JSON value starting at b[i], as
// far as brackets and strings tell (not a validator); a value starting
// with a comma is scanned as a list's remaining items, to its closing
// bracket.
func skipValue(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == ',' {
		return found(jsonscan.Rest(b, i, maxNesting))
	}
	return found(jsonscan.Value(b, i, maxNesting))
}

// found is a jsonscan index as the fast decode takes it: -1 is a miss.
func found(i int) (int, error) {
	if i < 0 {
		return 0, errMiss
	}
	return i, nil
}
