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
// remembered. The result is the same either way (TestIDsMemo). It is safe
// for concurrent use; the zero value is ready.
type idsMemo struct {
	mu   sync.Mutex
	head []byte // the list as the engine wrote it, without its closing bracket
	ids  []int  // its ids (not empty)
}

// parse reads a JSON list of token ids (or null), as tokenIDs does; on a
// nil memo it is tokenIDs' decode. A continuation appends to the ids
// before in place when their array has room: the memo's ids are the
// longest view of their array, claimed by the call that continues them,
// and what parse returns has no room to append to (its capacity is its
// length), so that no holder of earlier ids sees them change.
func (m *idsMemo) parse(b []byte) (tokenIDs, error) {
	b = bytes.TrimSpace(b)
	if m != nil {
		head, prev := m.claim()
		if ids, ok := continuedIDs(b, head, prev); ok {
			m.keep(b, ids)
			return ids[:len(ids):len(ids)], nil
		}
	}
	var t tokenIDs
	if err := t.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	m.keep(b, t)
	return t[:len(t):len(t)], nil
}

// claim takes the remembered list and its ids: until the claimer keeps
// another, nobody else may continue them.
func (m *idsMemo) claim() (head []byte, ids []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	head, ids = m.head, m.ids
	m.head, m.ids = nil, nil
	return head, ids
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

// keep remembers list b and its ids (a list that is empty or null leaves
// nothing to continue).
func (m *idsMemo) keep(b []byte, ids []int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ids) == 0 {
		m.head, m.ids = nil, nil
		return
	}
	m.head, m.ids = bytes.TrimRight(b[:len(b)-1], " \t\r\n"), ids
}
