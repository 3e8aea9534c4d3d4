package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adapterkit"
	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/process"
)

// JSON-RPC error codes used or recognised by the adapter.
const (
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeAuthRequired     = -32000 // ACP: authentication required
	CodeRequestCancelled = -32800 // ACP: request cancelled
)

// RPCError is a JSON-RPC 2.0 error object, as answered by the agent.
type RPCError struct {
	// Code is the JSON-RPC or ACP error code.
	Code int `json:"code"`
	// Message is the agent's description.
	Message string `json:"message"`
	// Data is the optional error data, as sent.
	Data json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	s := fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
	if len(e.Data) > 0 && !bytes.Equal(e.Data, []byte("null")) {
		s += " (" + clip.Bytes(e.Data) + ")"
	}
	return s
}

// errClosed reports that the agent's stdout ended.
var errClosed = errors.New("agent closed its output")

// limitError reports output beyond a limit: too many bytes in a call, or
// one over-long line.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// message is one JSON-RPC 2.0 message in either direction.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

func hasID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// handler answers a request of the agent: a result, or an error.
type handler func(method string, params json.RawMessage) (any, *RPCError)

// watch says how a wait for a response treats what arrives meanwhile.
type watch struct {
	// notify receives the agent's notifications in order; nil drops them.
	notify func(method string, params json.RawMessage)
	// limit bounds the agent's output from base (OutputBytes) on; 0: none.
	limit, base int64
	// values bounds the JSON values of the turn's lines; nil: each line's
	// alone.
	values *adapterkit.TurnValues
	// response, when set, is offered the responses to other ids than the
	// awaited one; it returns true for those it takes (queued prompts).
	response func(m *message) bool
}

// answerQueue and answerBytes bound the answers to the agent's requests
// that wait to be written (beyond what the agent's stdin pipe holds, 64 KiB
// on Linux): their number, and their bytes (an answer echoes the request's
// id and may echo an option id, which the agent chose).
const (
	answerQueue = 64
	answerBytes = 1 << 20
)

// conn is the JSON-RPC 2.0 connection over the agent's stdio. It has no
// reader of its own: the caller waiting for a response reads the agent's
// stdout lines, so notifications are handled in order, before the response
// that follows them, on the caller's goroutine. Nothing reads the agent's
// output while no call waits (between turns); it waits in the agent's
// stdout pipe, and an agent that fills it blocks until the next call.
//
// Requests of the agent are answered by serve, called on the reading
// goroutine (decisions are quick and see the turn's state); the answers
// are written, in order, by one writer goroutine (started with the first
// answer) from a queue bounded by answerQueue and answerBytes. When the
// queue is full the agent has not read its stdin for a pipe's worth of
// answers: the reader waits for room under the waiting call's context
// (the turn's deadline), so that it stops reading an agent that does not
// read, and neither memory nor goroutines grow with the agent's requests.
// close ends the writer. A turn's prompt queued behind an unread answer
// keeps the turn's deadline: the process's write lock is taken under the
// writer's context (process.Process.Write).
type conn struct {
	p       *process.Process
	log     *adapterkit.LogLimit
	serve   handler
	maxLine int // the line limit in force, for messages
	nextID  atomic.Int64

	ctx     context.Context // ends the answer writer
	cancel  context.CancelFunc
	mu      sync.Mutex
	closed  bool
	writer  bool          // the answer writer was started
	pending [][]byte      // the answers to write, encoded, oldest first
	queued  int           // bytes in pending
	ready   chan struct{} // signals the writer: an answer was queued
	room    chan struct{} // signals the reader: the writer took an answer
	wg      sync.WaitGroup
}

func newConn(p *process.Process, log *adapterkit.LogLimit, maxLine int, serve handler) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{p: p, log: log, serve: serve, maxLine: maxLine, ctx: ctx, cancel: cancel,
		ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// write sends one message as one line.
func (c *conn) write(ctx context.Context, m *message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Method, err)
	}
	return c.writeLine(ctx, b)
}

// writeLine writes b and a newline as one write (one at a time: the
// process's write lock, taken under ctx).
func (c *conn) writeLine(ctx context.Context, b []byte) error {
	return c.p.WriteLine(ctx, b)
}

func encodeParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	return b, nil
}

// request sends a request and returns its id.
func (c *conn) request(ctx context.Context, method string, params any) (int64, error) {
	raw, err := encodeParams(params)
	if err != nil {
		return 0, err
	}
	id := c.nextID.Add(1)
	err = c.write(ctx, &message{ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw})
	return id, err
}

// requestAs sends a request with an id from c.nextID the caller took
// (so that it can expect the response before the request is written).
func (c *conn) requestAs(ctx context.Context, id int64, method string, params any) error {
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	return c.write(ctx, &message{ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw})
}

// notify sends a notification.
func (c *conn) notify(ctx context.Context, method string, params any) error {
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	return c.write(ctx, &message{Method: method, Params: raw})
}

// call sends a request and waits for its response (see await).
func (c *conn) call(ctx context.Context, method string, params any, w watch) (json.RawMessage, error) {
	id, err := c.request(ctx, method, params)
	if err != nil {
		return nil, err
	}
	return c.await(ctx, id, w)
}

// isID reports whether a response id is ours: the number, or (leniently)
// the number as a string.
func isID(raw json.RawMessage, id int64) bool {
	s := string(bytes.TrimSpace(raw))
	n := strconv.FormatInt(id, 10)
	return s == n || s == `"`+n+`"`
}

// await reads the agent's output until the response to request id arrives
// and returns its result, or its error as *RPCError. Meanwhile it passes
// notifications to w.notify, answers the agent's requests, and logs what is
// not JSON-RPC. It fails with ctx's error, errClosed when the agent's output
// ends, and *limitError when the output exceeds w.limit or a line is too
// long.
func (c *conn) await(ctx context.Context, id int64, w watch) (json.RawMessage, error) {
	for {
		line, err := c.p.ReadLine(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("acp: read the agent's output: %w", err)
			}
			return nil, errClosed
		}
		if line.TooLong {
			return nil, &limitError{fmt.Sprintf("agent wrote a %d-byte line (limit %d)", line.Size, c.maxLine)}
		}
		if err := w.values.Check(line.Text); err != nil {
			f, _ := harness.AsFailure(err)
			return nil, &limitError{f.Message}
		}
		if w.limit > 0 {
			if n := c.p.OutputBytes() - w.base; n > w.limit {
				return nil, &limitError{fmt.Sprintf("agent wrote more than %d bytes in one turn (episode.output_limit)", w.limit)}
			}
		}
		if result, done, err := c.dispatch(ctx, line.Text, id, w); done {
			return result, err
		}
	}
}

// dispatch handles one stdout line while waiting for the response to id:
// it answers requests, passes notifications to w.notify and reports done
// with the result or error of the response to id.
func (c *conn) dispatch(ctx context.Context, text []byte, id int64, w watch) (json.RawMessage, bool, error) {
	m, ok := c.decode(text)
	if !ok {
		return nil, false, nil
	}
	switch {
	case m.Method == "" && hasID(m.ID):
		if isID(m.ID, id) {
			if m.Error != nil {
				return nil, true, m.Error
			}
			return m.Result, true, nil
		}
		if w.response != nil && w.response(m) {
			break
		}
		c.log.Warn("acp: response to an unknown request id", "id", clip.Bytes(m.ID))
	case m.Method != "" && hasID(m.ID):
		if err := c.answer(ctx, m); err != nil {
			return nil, true, err
		}
	case m.Method != "":
		if w.notify != nil {
			w.notify(m.Method, m.Params)
		} else {
			c.log.Debug("acp: notification outside a turn", "method", clip.String(m.Method))
		}
	default:
		c.log.Warn("acp: malformed JSON-RPC message", "line", clip.Bytes(text))
	}
	return nil, false, nil
}

// decode parses one stdout line; lines that are not a JSON object are
// logged and skipped (agents print warnings and banners).
func (c *conn) decode(text []byte) (*message, bool) {
	t := bytes.TrimSpace(text)
	if len(t) == 0 {
		return nil, false
	}
	var m message
	if t[0] != '{' || json.Unmarshal(t, &m) != nil {
		c.log.Debug("acp: ignoring non-JSON-RPC output", "line", clip.Bytes(t))
		return nil, false
	}
	return &m, true
}

// answer serves a request of the agent and queues the answer for the
// writer, waiting for room in the queue until ctx ends (with its error).
func (c *conn) answer(ctx context.Context, m *message) error {
	result, rerr := c.serve(m.Method, m.Params)
	out := &message{JSONRPC: "2.0", ID: m.ID}
	if rerr != nil {
		out.Error = rerr
	} else {
		raw, err := encodeParams(result)
		switch {
		case err != nil:
			out.Error = &RPCError{Code: -32603, Message: err.Error()}
		case raw == nil:
			out.Result = json.RawMessage("null") // a response must carry a result
		default:
			out.Result = raw
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encode the answer to %s: %w", clip.String(m.Method), err)
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil
		}
		if !c.writer {
			c.writer = true
			c.wg.Add(1)
			go c.writeAnswers()
		}
		// One answer is taken whatever its size, or none could be.
		if len(c.pending) == 0 || (len(c.pending) < answerQueue && c.queued+len(b) <= answerBytes) {
			c.pending = append(c.pending, b)
			c.queued += len(b)
			c.mu.Unlock()
			signal(c.ready)
			return nil
		}
		c.mu.Unlock()
		select {
		case <-c.room:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.ctx.Done():
			return nil
		}
	}
}

// signal wakes the one waiter on ch (capacity 1) now or at its next wait.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// writeAnswers writes the queued answers, in order, until close.
func (c *conn) writeAnswers() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ready:
		case <-c.ctx.Done():
			return
		}
		for {
			c.mu.Lock()
			if len(c.pending) == 0 {
				c.pending = nil // let the backing array go
				c.mu.Unlock()
				break
			}
			b := c.pending[0]
			c.pending[0] = nil
			c.pending = c.pending[1:]
			c.queued -= len(b)
			c.mu.Unlock()
			signal(c.room)
			if err := c.writeLine(c.ctx, b); err != nil {
				if c.ctx.Err() != nil {
					return
				}
				c.log.Debug("acp: answer not delivered", "err", err)
			}
		}
	}
}

// close stops the answer writer; wait waits for it.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
}

func (c *conn) wait() { c.wg.Wait() }
