package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/wire"
)

// Records and replays of tool calls, for forks of an episode. A Server
// with ServerOptions.Record keeps every served call (its served name, its
// arguments as received and the result the harness got), bounded by
// ServerOptions.MaxRecordBytes; Records hands them over between turns. A
// Server with ServerOptions.Replay answers its next calls from such a
// record, in order, without calling the tool, as long as each call has the
// recorded call's name and arguments (compared as decoded JSON: key order
// and spacing do not matter). Concurrent calls (an agent's parallel tool
// calls) may arrive in another order than recorded, so a call may take any
// of the first ServerOptions.ReplayWindow unanswered records, the earliest
// that matches. A call matching none is a divergence, reported against the
// first unanswered record: it gets an error result, OnDivergence is
// called, and no later call is answered, from the record or live (the fork
// has failed). Once the record is used up, calls go to the tools; EndReplay
// reports records left unanswered when the replayed turns are over.

// ToolRecord is one served tool call as a replay answers it.
type ToolRecord struct {
	// Served is the name the harness called.
	Served string
	// Arguments are the raw JSON arguments as received (empty for none).
	Arguments json.RawMessage
	// Result is what the harness received.
	Result *mcp.CallToolResult
}

// DefaultMaxRecordBytes is ServerOptions.MaxRecordBytes's default.
const DefaultMaxRecordBytes = 16 << 20

// DefaultReplayWindow is ServerOptions.ReplayWindow's default.
const DefaultReplayWindow = 8

var (
	// ErrRecordFull: the record of served calls passed
	// ServerOptions.MaxRecordBytes; the calls after were not kept.
	ErrRecordFull = errors.New("bridge: the record of tool calls is full")
	// ErrNotRecording: Records on a Server without ServerOptions.Record.
	ErrNotRecording = errors.New("bridge: the server does not record its calls (ServerOptions.Record)")
)

// callRecord holds a Server's record and replay.
type callRecord struct {
	mu     sync.Mutex
	on     bool
	max    int64
	bytes  int64
	recs   []ToolRecord
	full   bool
	replay []ToolRecord
	done   []bool // which of replay were answered
	pos    int    // the first not answered
	window int
	div    *wire.Divergence
	onDiv  func(wire.Divergence)
}

func newCallRecord(opts ServerOptions) *callRecord {
	r := &callRecord{on: opts.Record, max: opts.MaxRecordBytes, onDiv: opts.OnDivergence, replay: slices.Clone(opts.Replay),
		done: make([]bool, len(opts.Replay)), window: opts.ReplayWindow}
	if r.max <= 0 {
		r.max = DefaultMaxRecordBytes
	}
	if r.window <= 0 {
		r.window = DefaultReplayWindow
	}
	for _, rec := range opts.Inherit {
		r.keep(rec.Served, rec.Arguments, rec.Result)
	}
	return r
}

// recordOverhead is what a kept call holds in Go objects beyond its JSON
// (the record, the result's struct, its content's interface and text
// block), counted against MaxRecordBytes with it: counted by JSON alone, a
// harness's many calls with tiny arguments and results held 6x the bound
// (an outside red team's lead; TestRecordMemoryStaysNearItsBound).
const recordOverhead = 256

// keep records a served call, while the record has room.
func (r *callRecord) keep(served string, args json.RawMessage, res *mcp.CallToolResult) {
	if !r.on {
		return
	}
	n := int64(recordOverhead + len(served) + len(args))
	if b, err := json.Marshal(res); err == nil {
		n += int64(len(b))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.full || r.bytes+n > r.max {
		r.full = true
		return
	}
	r.bytes += n
	r.recs = append(r.recs, ToolRecord{Served: served, Arguments: bytes.Clone(args), Result: res})
}

// Records returns the calls served so far, in the order they ended, when
// ServerOptions.Record is set. Past ServerOptions.MaxRecordBytes it
// returns the calls kept until then with ErrRecordFull (wrapped): a replay
// of them cannot go past them.
func (s *Server) Records() ([]ToolRecord, error) {
	r := s.rec
	if !r.on {
		return nil, ErrNotRecording
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.recs)
	if r.full {
		return out, fmt.Errorf("%w: over %d bytes (ServerOptions.MaxRecordBytes); %d calls kept", ErrRecordFull, r.max, len(out))
	}
	return out, nil
}

// Replaying reports whether recorded calls remain to be replayed (false
// too once the replay diverged).
func (s *Server) Replaying() bool {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.rec.div == nil && s.rec.pos < len(s.rec.replay)
}

// Diverged returns the replay's divergence, or nil.
func (s *Server) Diverged() *wire.Divergence {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if s.rec.div == nil {
		return nil
	}
	d := *s.rec.div
	return &d
}

// fromRecord answers a call of served with args from the replay: the
// recorded result (replayed), an error result after a divergence (err is
// the divergence), or nothing (live: the call goes to the tool).
func (r *callRecord) fromRecord(served string, args json.RawMessage) (res *mcp.CallToolResult, replayed bool, err error) {
	r.mu.Lock()
	if r.div != nil {
		d := *r.div
		r.mu.Unlock()
		return divergenceResult(&d), false, &d
	}
	if r.pos >= len(r.replay) {
		r.mu.Unlock()
		return nil, false, nil
	}
	at := -1
	for i, seen := r.pos, 0; i < len(r.replay) && seen < r.window; i++ {
		if r.done[i] {
			continue
		}
		seen++
		if rec := r.replay[i]; rec.Served == served && sameArguments(rec.Arguments, args) {
			at = i
			break
		}
	}
	if at >= 0 {
		r.done[at] = true
		for r.pos < len(r.replay) && r.done[r.pos] {
			r.pos++
		}
		r.mu.Unlock()
		out := *r.replay[at].Result
		return &out, true, nil
	}
	want := r.replay[r.pos]
	d := &wire.Divergence{Door: wire.DoorTool, Index: r.pos + 1, Field: "arguments",
		Want: excerpt(string(want.Arguments)), Got: excerpt(string(args))}
	if want.Served != served {
		d.Field, d.Want, d.Got = "name", want.Served, served
	}
	r.div, r.pos = d, len(r.replay)
	r.mu.Unlock()
	if r.onDiv != nil {
		r.onDiv(*d)
	}
	return divergenceResult(d), false, d
}

// EndReplay ends a replay when the fork's replayed turns are over:
// recorded calls still unanswered mean the fork made fewer tool calls than
// its parent, a divergence too (field "calls"; OnDivergence is called and
// it is returned). Without one it returns nil, and later calls go to the
// tools. It returns the replay's divergence if it had diverged already.
func (s *Server) EndReplay() *wire.Divergence {
	r := s.rec
	r.mu.Lock()
	if r.div != nil {
		d := *r.div
		r.mu.Unlock()
		return &d
	}
	left := 0
	for i := r.pos; i < len(r.replay); i++ {
		if !r.done[i] {
			left++
		}
	}
	if left == 0 {
		r.pos = len(r.replay)
		r.mu.Unlock()
		return nil
	}
	d := &wire.Divergence{Door: wire.DoorTool, Index: r.pos + 1, Field: "calls",
		Want: fmt.Sprintf("%d more calls, the next %s", left, r.replay[r.pos].Served), Got: "none: the replayed turns ended"}
	r.div, r.pos = d, len(r.replay)
	r.mu.Unlock()
	if r.onDiv != nil {
		r.onDiv(*d)
	}
	out := *d
	return &out
}

// divergenceResult is the error result of a diverged replay's calls.
func divergenceResult(d *wire.Divergence) *mcp.CallToolResult {
	return mcp.NewToolResultError("bridge: this fork's replay diverged from its parent's record (" + d.Error() + "); no more tool calls are answered")
}

// sameArguments compares two calls' arguments as decoded JSON; no
// arguments, null and {} are the same. Arguments that do not decode are
// compared as bytes.
func sameArguments(a, b json.RawMessage) bool {
	va, erra := decodeArgs(a)
	vb, errb := decodeArgs(b)
	if erra != nil || errb != nil {
		return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b))
	}
	return reflect.DeepEqual(va, vb)
}

// decodeArgs decodes a call's arguments for sameArguments, each number
// exact (canonicalNumbers): decoded into float64, two integers past 2^53
// were the same call, and a replaying sibling was answered with its
// parent's result for another one (an outside red team).
func decodeArgs(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return canonicalNumbers(v), nil
}

// canonicalNumbers is v with each json.Number written one way, as a
// canonicalNumber: an integer literal exactly (big.Int), any other as its
// float64 (1.0 and 1e0 are 1, as they were).
func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonicalNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonicalNumbers(e)
		}
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			if n, ok := new(big.Int).SetString(string(x), 10); ok {
				return canonicalNumber(n.String())
			}
		}
		f, err := x.Float64()
		if err != nil {
			return canonicalNumber(x)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return canonicalNumber(strconv.FormatInt(int64(f), 10))
		}
		return canonicalNumber(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return v
}

// canonicalNumber is a number of a call's arguments as canonicalNumbers
// writes it: a type of its own, so that it never equals a string.
type canonicalNumber string

// excerptLen bounds what a divergence quotes of arguments.
const excerptLen = 120

func excerpt(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > excerptLen {
		cut := excerptLen
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	if s == "" {
		return "no arguments"
	}
	return s
}
