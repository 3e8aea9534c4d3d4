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

// restSize is about the JSON length of obs without its response: its
// strings' lengths, and the encoding of its structured parts only when it
// has them (a task's metadata, a grade, reward details, model issues,
// extra), plus the overhead of its small fields (entryOverhead). An
// ordinary turn's observation is sized without encoding anything: this
// runs at every turn's end.
func restSize(obs *wire.Observation) int64 {
	if obs == nil {
		return 0
	}
	m := &obs.Metadata
	n := int64(len(m.EpisodeID) + len(m.Error) + len(m.StderrTail) + len(m.TaskID) + len(m.TaskInstruction) +
		len(m.UserReason) + len(m.MessageSource) + len(m.Isolation))
	for _, s := range m.InjectedTools {
		n += int64(len(s)) + 3
	}
	for _, s := range m.LimitsReached {
		n += int64(len(s)) + 3
	}
	if len(m.TaskMetadata) > 0 {
		n += encodedSize(m.TaskMetadata)
	}
	if len(m.Extra) > 0 {
		n += encodedSize(m.Extra)
	}
	if m.Grade != nil {
		n += encodedSize(m.Grade)
	}
	if len(m.RewardDetails) > 0 {
		n += encodedSize(m.RewardDetails)
	}
	if len(m.ModelIssues) > 0 {
		n += encodedSize(m.ModelIssues)
	}
	if m.Fork != nil || m.Truncated != nil {
		n += 256 // a few small fields each
	}
	return n
}

// encodedSize is v's JSON length (0 if it does not encode).
func encodedSize(v any) int64 {
	b, err := wire.MarshalNoEscape(v)
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
