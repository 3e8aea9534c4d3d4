package session

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// eventQueue runs the environment's event queue (configuration events:)
// for one episode: it fires each event when its trigger holds, applies its
// effect and records an env_event. A configuration without events has no
// queue (queueFor returns nil, and every method of a nil queue does
// nothing), so a static environment runs exactly as before.
//
// Triggers: before_turn at the start of the turn (beforeTurn), after_tool
// when a bridge tool_result of a matching call is logged during a turn (the
// event log's tap, on the bridge's goroutine before the harness has the
// result), after on a timer of the running turn (startTurn), and
// response_matches once the turn's response is in (afterResponse).
type eventQueue struct {
	s      *Session
	r      *run
	events []config.EventConfig

	mu    sync.Mutex
	fired []int    // times each event fired
	next  []string // texts for the next turn's message
	seq   int      // fired events so far
	args  map[string][]byte
	tctx  context.Context // the running turn's, nil between turns
	turnN int
}

// queueFor returns r's event queue, made on first use; nil without events.
func (s *Session) queueFor(r *run) *eventQueue {
	if len(s.cfg.Events) == 0 {
		return nil
	}
	r.queueOnce.Do(func() {
		r.queue = &eventQueue{s: s, r: r, events: s.cfg.Events, fired: make([]int, len(s.cfg.Events)), args: map[string][]byte{}}
	})
	return r.queue
}

// claim reports whether event i may fire now, counting it.
func (q *eventQueue) claim(i int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.events[i].IsOnce() && q.fired[i] > 0 {
		return false
	}
	q.fired[i]++
	return true
}

// beforeTurn fires the before_turn events of turn n and returns msg with
// the texts queued for this turn appended.
func (q *eventQueue) beforeTurn(ctx context.Context, n int, msg string) string {
	if q == nil {
		return msg
	}
	q.mu.Lock()
	q.turnN = n
	q.mu.Unlock()
	for i := range q.events {
		if q.events[i].BeforeTurn == n && q.claim(i) {
			q.fire(ctx, i, wire.TriggerBeforeTurn, fmt.Sprintf("turn %d", n), "the turn had not started: it is part of the turn's message")
		}
	}
	q.mu.Lock()
	texts := q.next
	q.next = nil
	q.mu.Unlock()
	for _, t := range texts {
		if msg == "" {
			msg = t
		} else {
			msg += "\n\n" + t
		}
	}
	return msg
}

// startTurn arms the running turn n's triggers: the tap on the event log
// (after_tool) and the timers (after). The returned stop disarms them and
// waits for a timer's effect under way; call it once the adapter's turn
// has returned.
func (q *eventQueue) startTurn(ctx context.Context, n int) (stop func()) {
	if q == nil {
		return func() {}
	}
	tctx, cancel := context.WithCancel(ctx)
	q.mu.Lock()
	q.tctx, q.turnN = tctx, n
	clear(q.args)
	q.mu.Unlock()
	q.s.events.setTap(q.observe)
	var wg sync.WaitGroup
	if timers := q.timers(); len(timers) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.runTimers(tctx, timers)
		}()
	}
	return func() {
		q.s.events.setTap(nil)
		cancel()
		wg.Wait()
		q.mu.Lock()
		q.tctx = nil
		q.mu.Unlock()
	}
}

// timers returns the indexes of the after events, by delay.
func (q *eventQueue) timers() []int {
	var out []int
	for i := range q.events {
		if q.events[i].After > 0 {
			out = append(out, i)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return q.events[out[a]].After < q.events[out[b]].After })
	return out
}

// runTimers fires the after events of the running turn as their delays
// pass, until ctx ends (the turn is over).
func (q *eventQueue) runTimers(ctx context.Context, timers []int) {
	start := time.Now()
	for _, i := range timers {
		d := q.events[i].After.D() - time.Since(start)
		t := time.NewTimer(max(d, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if q.claim(i) {
			q.fire(ctx, i, wire.TriggerAfter, q.events[i].After.String(), "")
		}
	}
}

// observe is the event log's tap during a turn: a bridge tool_result of a
// call matching an after_tool pattern fires the event.
func (q *eventQueue) observe(e wire.Event) {
	if e.Origin != wire.OriginBridge {
		return
	}
	switch p := e.Data.(type) {
	case *wire.ToolCall:
		if p.CallID != "" {
			q.mu.Lock()
			q.args[p.CallID] = p.Arguments
			q.mu.Unlock()
		}
	case *wire.ToolResult:
		q.mu.Lock()
		args := q.args[p.CallID]
		delete(q.args, p.CallID)
		ctx := q.tctx
		q.mu.Unlock()
		if ctx == nil {
			return
		}
		for i := range q.events {
			if pat := q.events[i].AfterTool; pat != nil && pat.Matches(p.ToolName, args) && q.claim(i) {
				q.fire(ctx, i, wire.TriggerAfterTool, p.ToolName, "")
			}
		}
	}
}

// afterResponse fires the response_matches events whose pattern matches
// turn n's response.
func (q *eventQueue) afterResponse(ctx context.Context, response string) {
	if q == nil {
		return
	}
	for i := range q.events {
		re := q.events[i].ResponseRegexp()
		if re != nil && re.MatchString(response) && q.claim(i) {
			q.fire(ctx, i, wire.TriggerResponseMatches, q.events[i].ResponseMatches, "the turn had ended: it is part of the next turn's message")
		}
	}
}

// deliverTimeout bounds handing one event's text to the harness, and
// toolEffectTimeout one tool effect's call.
const (
	deliverTimeout    = 10 * time.Second
	toolEffectTimeout = 60 * time.Second
)

// fire applies event i's effect and records it. notLive, when set, says
// why no turn can take a deliver effect now (it then joins the next turn's
// message); "" means the turn is running.
func (q *eventQueue) fire(ctx context.Context, i int, trigger, detail, notLive string) {
	e := &q.events[i]
	ev := &wire.EnvEvent{Index: i, Name: e.Name, Trigger: trigger, Detail: detail}
	at := wire.Now()
	switch {
	case e.Message != "":
		ev.Effect, ev.Text, ev.Delivery = wire.EffectMessage, e.Message, wire.DeliveryNextMessage
		q.queueNext(e.Message)
	case e.Deliver != "":
		ev.Effect, ev.Text = wire.EffectDeliver, e.Deliver
		if notLive == "" {
			notLive = q.deliver(ctx, e.Deliver)
		}
		if notLive == "" {
			ev.Delivery = wire.DeliveryMidTurn
		} else {
			ev.Delivery, ev.Fallback = wire.DeliveryNextMessage, notLive
			q.queueNext(e.Deliver)
		}
	case e.File != nil:
		ev.Effect, ev.Path, ev.Delivery = wire.EffectFile, e.File.Path, wire.DeliveryWorkspace
		if err := q.r.ep.PlaceFile(e.File.Path, e.File.Content); err != nil {
			ev.Error = err.Error()
		}
	case e.Tool != nil:
		ev.Effect, ev.Tool, ev.Delivery = wire.EffectTool, e.Tool.Server+"/"+e.Tool.Name, wire.DeliveryToolServer
		args, err := e.Tool.ArgumentsJSON()
		var text string
		if err == nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), toolEffectTimeout)
			text, err = q.r.ep.CallSourceTool(cctx, e.Tool.Server, e.Tool.Name, args)
			cancel()
			ev.Result = clipResult(text)
		}
		if err != nil {
			ev.Error = err.Error()
		} else if text = strings.TrimSpace(text); text != "" && e.Tool.Result != "" {
			q.toolText(ctx, ev, e.Tool.Result, text, notLive)
		}
	}
	if ev.Error != "" {
		q.r.ep.Log().Warn("environment event failed", "event", i, "effect", ev.Effect, "err", ev.Error)
	}
	q.mu.Lock()
	q.seq++
	seq, turn := q.seq, q.turnN
	q.mu.Unlock()
	q.r.ep.NoteEnvEvent(gateway.EnvEvent{Seq: seq, Turn: turn, Index: i, Name: e.Name, Trigger: trigger,
		Effect: ev.Effect, Delivery: ev.Delivery, Text: ev.Text})
	rec := wire.New(wire.OriginDaemon, ev)
	rec.Timestamp = at
	q.s.events.add(rec)
}

// toolText passes a tool effect's result text on as the event's text
// (ToolEffect.Result): appended to the next message, or delivered as a
// deliver effect is.
func (q *eventQueue) toolText(ctx context.Context, ev *wire.EnvEvent, how, text, notLive string) {
	ev.Text = text
	if how == config.ResultDeliver && notLive == "" {
		notLive = q.deliver(ctx, text)
		if notLive == "" {
			ev.Delivery = wire.DeliveryMidTurn
			return
		}
	}
	if how == config.ResultDeliver {
		ev.Fallback = notLive
	}
	ev.Delivery = wire.DeliveryNextMessage
	q.queueNext(text)
}

// deliver hands text to the running turn's harness; it returns "" once
// delivered, else why it could not be (the text then joins the next
// turn's message).
func (q *eventQueue) deliver(ctx context.Context, text string) string {
	a := q.r.adapter()
	d, ok := a.(harness.Deliverer)
	if !ok {
		return fmt.Sprintf("the %s adapter cannot take input during a turn", q.s.cfg.Harness.Adapter)
	}
	dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	err := d.Deliver(dctx, text)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, harness.ErrCannotDeliver):
		return fmt.Sprintf("the harness cannot take input during a turn (%s adapter)", q.s.cfg.Harness.Adapter)
	case errors.Is(err, harness.ErrNoTurn):
		return "the turn had ended: it is part of the next turn's message"
	default:
		return "delivery failed: " + err.Error()
	}
}

// queueNext appends text to the next turn's message.
func (q *eventQueue) queueNext(text string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next = append(q.next, strings.TrimSpace(text))
}

// maxEffectResult bounds the tool result text an env_event keeps.
const maxEffectResult = 4 << 10

// clipResult cuts a tool effect's result text to maxEffectResult bytes.
func clipResult(s string) string {
	if len(s) <= maxEffectResult {
		return s
	}
	return strings.ToValidUTF8(s[:maxEffectResult], "") + "…"
}
