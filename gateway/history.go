package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
)

// History is an immutable copy of a gateway's recorded calls, taken
// between turns (Gateway.History) so that a fork of the episode starts from
// them (Options.History): each call's index, turn, token ids, logprobs,
// policy versions, sampling and issues, the print of its request that a
// replay matches against, and the answer as the agent received it (status,
// headers, body; for a stream the exact bytes streamed). It also holds the
// rewards recorded for its turns and the environment's events noted among
// its calls. Parents are not stored: a gateway opened with a History links
// its calls again, as the prefix index links any call.
type History struct {
	calls   []*call // in index order, unlinked (no parent, no children)
	rewards map[int]float64
	events  []EnvEvent
}

// answer is what the agent received for one call: its status, the headers
// the gateway set, and the body bytes as written (a stream's exact bytes).
type answer struct {
	status int
	header http.Header
	body   []byte
}

// ErrAnswersNotRecorded is the error (wrapped) of a replay asked of a
// History some of whose answers were not kept: over
// Options.MaxRecordedAnswerBytes, with recording off, or not complete when
// the History was taken.
var ErrAnswersNotRecorded = errors.New("gateway: the history's answers were not all recorded")

// defaultMaxRecordedAnswerBytes is Options.MaxRecordedAnswerBytes's default.
const defaultMaxRecordedAnswerBytes = 64 << 20

// History returns a copy of every call recorded so far, with their
// answers. Take it between turns: a call still in flight is not in it, and
// one whose answer is still being written is in it without its answer (a
// replay of it is refused). A gateway opened with a History holds all of
// its calls from the start, so its own History has them all even while
// it is still replaying them: fork a fork once its replay is done. The
// copy shares no state with the gateway.
func (g *Gateway) History() *History {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := &History{rewards: maps.Clone(g.rewards), events: slices.Clone(g.events)}
	for _, c := range byIndex(g.calls) {
		h.calls = append(h.calls, c.unlinked())
	}
	return h
}

// unlinked returns a copy of c without the links and marks that belong to
// one gateway (its parent, children, emission and filing key). The token
// slices and the answer are shared: nothing changes them once recorded.
func (c *call) unlinked() *call {
	o := *c
	o.parent, o.children, o.emitted, o.key = nil, nil, false, 0
	o.issues = slices.Clone(c.issues)
	return &o
}

// UpTo returns the part of h made in turns up to turn: its calls, the
// rewards of those turns and the events that fired in them.
func (h *History) UpTo(turn int) *History {
	out := &History{rewards: map[int]float64{}}
	for _, c := range h.calls {
		if c.turn <= turn {
			out.calls = append(out.calls, c)
		}
	}
	for t, r := range h.rewards {
		if t <= turn {
			out.rewards[t] = r
		}
	}
	for _, e := range h.events {
		if e.Turn <= turn {
			out.events = append(out.events, e)
		}
	}
	return out
}

// Len returns the number of calls h holds.
func (h *History) Len() int {
	if h == nil {
		return 0
	}
	return len(h.calls)
}

// LastTurn returns the turn of h's last call (0: no calls).
func (h *History) LastTurn() int {
	if h.Len() == 0 {
		return 0
	}
	n := 0
	for _, c := range h.calls {
		n = max(n, c.turn)
	}
	return n
}

// Replayable reports whether every call of h has its answer, so that a
// gateway can replay h (Options.Replay); the error (wrapping
// ErrAnswersNotRecorded) names the first call without one and why.
func (h *History) Replayable() error {
	if h == nil {
		return nil
	}
	for _, c := range h.calls {
		switch {
		case c.answer != nil && c.print != nil:
		case c.answerDropped && c.answerCap < 0:
			return fmt.Errorf("%w: call %d's answer was not kept: Options.MaxRecordedAnswerBytes is negative, so its gateway recorded no answers", ErrAnswersNotRecorded, c.index)
		case c.answerDropped:
			return fmt.Errorf("%w: call %d's answer was not kept: the gateway's recorded answers passed their cap, Options.MaxRecordedAnswerBytes = %d bytes (default %d MiB): raise it to replay this episode",
				ErrAnswersNotRecorded, c.index, c.answerCap, defaultMaxRecordedAnswerBytes>>20)
		default:
			return fmt.Errorf("%w: call %d had no complete answer when the history was taken (take it between turns)", ErrAnswersNotRecorded, c.index)
		}
	}
	return nil
}

// adopt makes h's calls the new gateway's own (New, under no lock: the
// gateway is not shared yet): the same indices, marked inherited, filed in
// the prefix index in index order so a later call can extend them, counted
// against the episode's budgets, with their answers' bytes counted against
// the answers' cap. Their events are not emitted again.
func (g *Gateway) adopt(h *History) {
	if h == nil {
		return
	}
	g.byTurn = map[int][]*call{}
	for _, hc := range h.calls {
		c := hc.unlinked()
		c.inherited = true
		g.calls = append(g.calls, c)
		g.byTurn[c.turn] = append(g.byTurn[c.turn], c)
		if c.trainable() {
			g.chains.add(c)
		}
		g.next = max(g.next, c.index)
		if !c.refused {
			g.usage.calls++
			g.usage.outputTokens += c.spent
		}
		if c.answer != nil {
			g.answerBytes += c.answer.size()
		}
	}
	if len(h.rewards) > 0 {
		g.rewards = maps.Clone(h.rewards)
	}
	g.events = slices.Clone(h.events)
	if g.opts.Replay {
		g.replay = slices.Clone(g.calls)
		g.replayed = make([]bool, len(g.replay))
	}
}

// size is what an answer costs the cap: its body and headers.
func (a *answer) size() int64 {
	n := int64(len(a.body))
	for k, vs := range a.header {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v))
		}
	}
	return n
}

// answerTee is the agent's ResponseWriter while a call is answered: it
// passes everything on and keeps a copy of the status, the headers and
// the body, up to limit bytes (past it the copy is dropped).
type answerTee struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
	limit  int64
	over   bool
}

// WriteHeader keeps the status and the headers set so far.
func (t *answerTee) WriteHeader(status int) {
	if t.status == 0 {
		t.status, t.header = status, t.ResponseWriter.Header().Clone()
	}
	t.ResponseWriter.WriteHeader(status)
}

// Write keeps b (while under the limit) and passes it on.
func (t *answerTee) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	if !t.over {
		if int64(t.body.Len()+len(b)) > t.limit {
			t.over = true
			t.body = bytes.Buffer{}
		} else {
			t.body.Write(b)
		}
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath (Flush).
func (t *answerTee) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// tee wraps w to keep the answer of a call, or returns nil when answers
// are not recorded (off, or their cap already passed).
func (g *Gateway) tee(w http.ResponseWriter) *answerTee {
	max := g.opts.MaxRecordedAnswerBytes
	if max < 0 {
		return nil
	}
	g.mu.Lock()
	room := max - g.answerBytes
	full := g.answersFull
	g.mu.Unlock()
	if full || room <= 0 {
		return &answerTee{ResponseWriter: w, over: true}
	}
	return &answerTee{ResponseWriter: w, limit: room}
}

// keepAnswer files the answer t kept as call c's, or marks it dropped when
// it did not fit the cap (from then on no answer is kept: a replay needs
// every answer up to where it ends, so later ones would be of no use).
func (g *Gateway) keepAnswer(c *call, t *answerTee) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c.answerCap = g.opts.MaxRecordedAnswerBytes
	if t == nil {
		c.answerDropped = true
		return
	}
	a := &answer{status: t.status, header: t.header, body: t.body.Bytes()} // the tee is done with its buffer
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if t.over || g.answersFull || g.answerBytes+a.size() > g.opts.MaxRecordedAnswerBytes {
		if !g.answersFull {
			g.log.Warn("gateway: recorded answers reached their cap; later calls cannot be replayed",
				"call", c.index, "max_recorded_answer_bytes", g.opts.MaxRecordedAnswerBytes)
		}
		g.answersFull, c.answerDropped = true, true
		return
	}
	g.answerBytes += a.size()
	c.answer = a
}
