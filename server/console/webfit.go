package console

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/harnessd/harnessd/wire"
)

// The console's window of a live episode's turns is bounded in bytes
// (maxWebBytes) as the session's window is: an entry is as big as the JSON
// of its records, which is what holds memory, and an entry larger than
// the whole window on its own is cut to fit it (fit) rather than dropped.

// truncatedConsole is the truncation reason of an observation the console
// cut to fit its window (metadata.truncated of the console's copy only:
// the trainer and the record file get the whole observation).
const truncatedConsole = "console_window"

// entryOverhead is what an entry's records cost beyond their text: the
// entry and the two records' fixed fields.
const entryOverhead = 512

// fitMargin is room kept for the markers when an entry is cut.
const fitMargin = 4 << 10

// entrySize is the entry's size: its message's and its observation's JSON
// length (the response counted by its length, not encoded).
func (t *turnEntry) entrySize() int64 {
	n := int64(entryOverhead)
	if t.msg != nil {
		n += int64(len(*t.msg))
	}
	return n + restSize(t.obs) + int64(len(responseOf(t.obs)))
}

// responseOf is obs's response ("" when it has none).
func responseOf(obs *wire.Observation) string {
	if obs == nil || obs.Metadata.Response == nil {
		return ""
	}
	return *obs.Metadata.Response
}

// restSize is the JSON length of obs without its response.
func restSize(obs *wire.Observation) int64 {
	if obs == nil {
		return 0
	}
	o := *obs
	o.Metadata.Response = nil
	b, err := wire.MarshalNoEscape(&o)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// fit sets the entry's size and, when it is larger than budget, cuts it
// to fit: the observation's extra (harness-reported facts) when it is
// more than a quarter of the budget, the message to a quarter of it, then
// the end of the response; the observation's copy says what it lost in
// metadata.truncated (reason console_window, response_bytes_dropped), a
// cut message ends with a note. What is kept is copied, so that the cut
// text's memory is freed.
func (t *turnEntry) fit(budget int64) {
	t.size = t.entrySize()
	if t.size <= budget {
		return
	}
	var cut *wire.Truncation
	mark := func() *wire.Truncation {
		if cut == nil {
			o := *t.obs
			cut = &wire.Truncation{}
			if o.Metadata.Truncated != nil {
				*cut = *o.Metadata.Truncated
			}
			cut.AddReason(truncatedConsole)
			o.Metadata.Truncated = cut
			t.obs = &o
		}
		return cut
	}
	if t.obs != nil && len(t.obs.Metadata.Extra) > 0 {
		if b, err := wire.MarshalNoEscape(t.obs.Metadata.Extra); err != nil || int64(len(b)) > budget/4 {
			mark()
			t.obs.Metadata.Extra = map[string]any{truncatedConsole: fmt.Sprintf("the console does not keep this turn's extra (%d bytes)", len(b))}
		}
	}
	if t.msg != nil && int64(len(*t.msg)) > budget/4 {
		m := cutText(*t.msg, int(budget/4))
		m += fmt.Sprintf("\n[… the console keeps the first %d of this message's %d bytes]", len(m), len(*t.msg))
		t.msg = &m
	}
	if resp := responseOf(t.obs); resp != "" {
		room := budget - entryOverhead - fitMargin - restSize(t.obs)
		if t.msg != nil {
			room -= int64(len(*t.msg))
		}
		if int64(len(resp)) > room {
			short := cutText(resp, int(max(room, 0)))
			mark().ResponseBytesDropped += int64(len(resp) - len(short))
			t.obs.Metadata.Response = &short
		}
	}
	t.size = t.entrySize()
}

// cutText returns a copy of s's first n bytes at most, cut at a character
// boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}
