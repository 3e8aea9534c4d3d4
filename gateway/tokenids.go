package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
)

// tokenIDs is a list of token ids, decoded without reflection: an engine's
// prompt ids are the bulk of its answer.
type tokenIDs []int

// UnmarshalJSON reads a JSON list of non-negative integers (or null).
func (t *tokenIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*t = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errors.New("token ids: not a list")
	}
	inner := b[1 : len(b)-1]
	out, err := appendIDs(make([]int, 0, bytes.Count(inner, []byte(","))+1), inner)
	if err != nil {
		return err
	}
	*t = out
	return nil
}

// appendIDs appends to out the ids of a list's inner text (between its
// brackets).
func appendIDs(out []int, inner []byte) ([]int, error) {
	n, digits, ended, from := 0, 0, false, len(out)
	for _, c := range inner {
		switch {
		case c >= '0' && c <= '9':
			if digits++; digits > 12 || ended {
				return nil, errors.New("token ids: malformed id")
			}
			n = n*10 + int(c-'0')
		case c == ',':
			if digits == 0 {
				return nil, errors.New("token ids: empty item")
			}
			out = append(out, n)
			n, digits, ended = 0, 0, false
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			ended = digits > 0
		default:
			return nil, fmt.Errorf("token ids: unexpected %q", c)
		}
	}
	if digits > 0 {
		out = append(out, n)
	} else if len(out) > from {
		return nil, errors.New("token ids: trailing comma")
	}
	return out, nil
}

// idsMemo remembers the prompt ids of the engine's answer before: the
// next call's prompt is most often that prompt, its completion and more,
// and its list the same text, a comma and more ids. Only those are
// parsed; the ids before are copied. Any other list is parsed in full, and
// remembered. The result is the same either way (TestIDsMemo). It also
// lends the buffer of an answer nobody holds any more to read the next
// into (buffer), so that reading a long conversation's answers allocates
// nothing. It is safe for concurrent use; the zero value is ready.
type idsMemo struct {
	mu   sync.Mutex
	head []byte // the list as the engine wrote it, without its closing bracket
	ids  []int  // its ids (not empty)
	buf  []byte // the answer head lies in (nil: not to be reused)
	// spare is an answer's buffer that nobody holds, at most maxSpare.
	spare []byte
}

// maxSpare bounds the answer buffer a memo keeps for the next answer.
const maxSpare = 4 << 20

// parse reads a JSON list of token ids (or null), as tokenIDs does; on a
// nil memo it is tokenIDs' decode. b lies in buf, the answer's buffer
// (nil: not to be reused), which the memo holds from then on when kept
// is true (the caller must not reuse it). A continuation appends to the
// ids before in place when their array has room: the memo's ids are the
// longest view of their array, claimed by the call that continues them,
// and what parse returns has no room to append to (its capacity is its
// length), so that no holder of earlier ids sees them change.
func (m *idsMemo) parse(b, buf []byte) (ids tokenIDs, kept bool, err error) {
	b = bytes.TrimSpace(b)
	if m == nil {
		if err = ids.UnmarshalJSON(b); err != nil {
			return nil, false, err
		}
		return ids[:len(ids):len(ids)], false, nil
	}
	head, prev, old := m.claim()
	ids, ok := continuedIDs(b, head, prev)
	if !ok {
		var t tokenIDs
		if err = t.UnmarshalJSON(b); err == nil {
			ids = t
		}
	}
	kept = err == nil && len(ids) > 0
	m.settle(b, ids, kept, buf, old)
	if err != nil {
		return nil, false, err
	}
	return ids[:len(ids):len(ids)], kept, nil
}

// claim takes the remembered list, its ids and its buffer: until the
// claimer settles, nobody else may continue them.
func (m *idsMemo) claim() (head []byte, ids []int, buf []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	head, ids, buf = m.head, m.ids, m.buf
	m.head, m.ids, m.buf = nil, nil, nil
	return head, ids, buf
}

// continuedIDs reads list b when it is head, a comma and more ids: prev
// (appended to, in place when it has room), then the ids after head.
func continuedIDs(b, head []byte, prev []int) ([]int, bool) {
	if len(prev) == 0 || !bytes.HasPrefix(b, head) || b[len(b)-1] != ']' {
		return nil, false
	}
	j := len(head)
	for j < len(b) && (b[j] == ' ' || b[j] == '\n' || b[j] == '\t' || b[j] == '\r') {
		j++
	}
	if j >= len(b)-1 || b[j] != ',' {
		return nil, false
	}
	out, err := appendIDs(prev, b[j+1:len(b)-1])
	if err != nil || len(out) == len(prev) {
		return nil, false
	}
	return out, true
}

// settle ends a parse: list b and its ids (in buf) are remembered when
// keep is true (a list that is empty, null or malformed leaves nothing to
// continue; the memo stays as the claim left it), and the claimed buffer
// old, which nobody reads any more, is lent to the next answer.
func (m *idsMemo) settle(b []byte, ids []int, keep bool, buf, old []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lend(old)
	if !keep {
		return
	}
	m.lend(m.buf) // remembered by a concurrent parse since the claim, and now by nobody
	m.head, m.ids, m.buf = bytes.TrimRight(b[:len(b)-1], " \t\r\n"), ids, buf
}

// keep remembers list b and its ids, in no buffer to reuse.
func (m *idsMemo) keep(b []byte, ids []int) {
	m.settle(b, ids, len(ids) > 0, nil, nil)
}

// lend makes buf, which nobody holds, the spare, unless it is too big or
// the spare is bigger. m.mu is held.
func (m *idsMemo) lend(buf []byte) {
	if cap(buf) > 0 && cap(buf) <= maxSpare && cap(buf) > cap(m.spare) {
		m.spare = buf[:0]
	}
}

// buffer returns a buffer to read an answer into: the spare (taken), or
// nil. Give it back with release when the memo did not keep it.
func (m *idsMemo) buffer() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.spare
	m.spare = nil
	return b
}

// release lends buf, an answer's buffer the memo did not keep and nobody
// reads any more, to the next answer.
func (m *idsMemo) release(buf []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lend(buf)
}
