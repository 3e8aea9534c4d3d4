package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// handleHarness serves the production /harness socket: one session per
// connection, session_started first, then per client message every event of
// the turn as its own frame, ending in turn_complete — or a terminal error
// event, after which the socket closes. {"type":"cancel"} interrupts the
// running turn. Frames sent during a turn are handled after it (at most
// maxHarnessBacklog of them; a cancel is taken at once).
func (s *Server) handleHarness(w http.ResponseWriter, r *http.Request) {
	wc, err := s.accept(w, r, surfaceHarness)
	if err != nil {
		return
	}
	s.conns.Add(1)
	defer s.conns.Done()

	m, err := s.create(kindHarness)
	if err != nil {
		e := s.execError(err)
		e.FactoryName = ""
		wc.send(e.frame(frameTypeError))
		wc.close(websocket.StatusPolicyViolation, e.Message)
		return
	}
	m.attached.Store(true)
	why := "client disconnected"
	defer func() {
		m.attached.Store(false)
		s.destroy(m, why)
	}()

	obs, err := s.reset(wc.ctx, m, session.ResetOptions{})
	if err != nil || obs.Done {
		if err == nil {
			err = fmt.Errorf("%s: %s", obs.Metadata.ErrorType, obs.Metadata.Error)
		}
		s.log.Warn("harness session failed to start", "session_id", m.id, "err", err)
		wc.send((&wireError{Message: "harness session failed", Code: codeSession}).frame(frameTypeError))
		wc.close(websocket.StatusInternalError, "harness session failed")
		why = "start-up failed"
		return
	}
	wc.send(wire.Frame[wire.SessionStarted]{Type: wire.FrameSessionStarted, Data: wire.SessionStarted{SessionID: m.id, Harness: s.cfg.Name}})

	var backlog []inbound
	for {
		var in inbound
		if len(backlog) > 0 {
			in, backlog = backlog[0], backlog[1:]
		} else {
			select {
			case in = <-wc.frames:
			case <-wc.gone:
				why = wc.goneReason()
				return
			case <-s.quit:
				why = "server shutting down"
				wc.close(websocket.StatusGoingAway, "server shutting down")
				return
			}
		}
		m.touch()
		msg, perr := parseHarnessFrame(in)
		wc.release(in)
		if perr != nil {
			wc.send(perr.frame(frameTypeProtoError))
			continue
		}
		if msg == nil { // a cancel with no turn running
			continue
		}
		var end string
		end, backlog = s.harnessTurn(wc, m, *msg, backlog)
		if end != "" {
			why = end
			return
		}
	}
}

// parseHarnessFrame validates a client frame: {"type":"message","content":
// str} (extra keys ignored; tabs and newlines in content, no other control
// characters) or {"type":"cancel"}. It returns nil, nil for a cancel.
func parseHarnessFrame(in inbound) (*string, *wireError) {
	if in.tooBig > 0 {
		e := tooBigError(in)
		e.Errors = nil
		return nil, e
	}
	// Decoded a field at a time: nothing else a client sends becomes Go
	// values (64 MiB of zeros decoded into them is 2.6 GB).
	if err := json.Unmarshal(in.data, new(json.RawMessage)); err != nil {
		return nil, &wireError{Message: "Invalid JSON: " + err.Error(), Code: codeInvalidJSON}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(in.data, &obj) != nil || obj == nil {
		return nil, &wireError{Message: "Invalid message: expected a JSON object", Code: codeValidation}
	}
	typ, _ := jsonscan.StringValue(obj["type"])
	switch typ {
	case frameTypeMessage:
		c, ok := jsonscan.StringValue(obj["content"])
		if !ok {
			return nil, &wireError{Message: "Invalid message: content must be a string", Code: codeValidation}
		}
		if fe := textFieldError(c, 0, true, "content"); fe != nil {
			return nil, &wireError{Message: "Invalid message: content: " + fe.Msg, Code: codeValidation, Errors: []fieldError{*fe}}
		}
		return &c, nil
	case frameTypeCancel:
		return nil, nil
	}
	return nil, &wireError{Message: fmt.Sprintf("Invalid message: type must be %q or %q", frameTypeMessage, frameTypeCancel), Code: codeValidation}
}

// maxHarnessBacklog bounds the frames of a /harness client that wait for
// the running turn to end: each costs its record whatever its size (the
// frame limit bounds only their bytes), so a client sending frames of one
// byte during a long turn made the daemon hold about 50 bytes for each 7 it
// sent, without end. A frame past it (a cancel excepted) is dropped, and
// one protocol_error after the turn says how many were.
const maxHarnessBacklog = 64

// harnessTurn runs one turn, streaming its events. It returns a non-empty
// reason when the connection must end, and backlog with the frames that
// arrived meanwhile appended (at most maxHarnessBacklog in all).
func (s *Server) harnessTurn(wc *wsConn, m *managed, content string, backlog []inbound) (end string, _ []inbound) {
	events := make(chan wire.Event, 1024)
	flushed := make(chan struct{})
	// The terminal error event is held back until the turn's error type is
	// known, which decides its public message.
	var terminal *wire.Event
	go func() {
		defer close(flushed)
		for e := range events {
			if isTerminalError(e) {
				terminal = &e
				continue
			}
			wc.send(e)
		}
	}()
	type result struct {
		obs *wire.Observation
		err error
	}
	done := make(chan result, 1)
	go func() {
		obs, err := s.step(wc.ctx, m, wire.Action{Message: content}, func(e wire.Event) {
			events <- e
			m.touch()
		})
		done <- result{obs, err}
	}()
	var res result
	quit := s.quit
	bounded := false
	dropped := 0
	defer func() {
		if bounded {
			releaseFloodMemory()
		}
	}()
wait:
	for {
		select {
		case res = <-done:
			break wait
		case in := <-wc.frames:
			if msg, perr := parseHarnessFrame(in); perr == nil && msg == nil {
				wc.release(in)
				ctx, cancel := context.WithTimeout(wc.ctx, writeTimeout)
				m.sess.Interrupt(ctx)
				cancel()
				continue
			}
			if len(backlog) >= maxHarnessBacklog {
				wc.release(in)
				dropped++
				continue
			}
			backlog = append(backlog, in)
		case <-quit:
			// Shutdown closes the session, which ends the turn.
			quit = nil
		}
	}
	close(events)
	<-flushed
	bounded = res.obs != nil && res.obs.Metadata.Truncated != nil
	if terminal != nil {
		if res.obs != nil && res.obs.Metadata.ErrorType != "" {
			e := *terminal
			e.Data = &wire.Error{Message: terminalMessage(res.obs.Metadata.ErrorType, res.obs.Metadata.Error)}
			wc.send(e)
		} else {
			wc.send(s.sanitizeEvent(*terminal))
		}
	}
	switch {
	case res.err != nil:
		// Misuse (episode over): a terminal error, as for a dead harness.
		wc.send(wire.ErrorEvent(wire.OriginDaemon, s.sanitizeMessage(res.err.Error()), false))
		wc.close(websocket.StatusNormalClosure, "episode over")
		return "episode over", nil
	case res.obs.Metadata.ErrorType != "" && res.obs.Metadata.ErrorType != wire.FailureMaxTurns:
		wc.close(websocket.StatusNormalClosure, string(res.obs.Metadata.ErrorType))
		return string(res.obs.Metadata.ErrorType), nil
	case res.obs.Done:
		wc.close(websocket.StatusNormalClosure, "episode complete")
		return "episode complete", nil
	}
	if dropped > 0 {
		wc.send((&wireError{Code: codeValidation, Message: fmt.Sprintf(
			"%d frames sent during the turn were dropped: at most %d frames wait for a turn to end",
			dropped, maxHarnessBacklog)}).frame(frameTypeProtoError))
	}
	return "", backlog
}

func isTerminalError(e wire.Event) bool {
	d, ok := e.Data.(*wire.Error)
	return ok && e.Origin == wire.OriginDaemon && !d.Recoverable
}

// terminalMessage is the public message of a turn that ended the session:
// the reference's messages (§13.1) for a dead harness, a stream without
// turn_complete and a timeout; the daemon's own limit messages as they are;
// nothing the harness printed.
func terminalMessage(t wire.FailureType, msg string) string {
	switch t {
	case wire.FailureTurnTimeout, wire.FailureEpisodeTimeout, wire.FailureOutputLimit, wire.FailureMaxTurns:
		return msg
	case wire.FailureHarnessExited:
		return "harness process is not running"
	case wire.FailureProtocol:
		return "harness event stream ended without a TURN_COMPLETE event"
	}
	return "harness turn failed"
}

// sanitizeEvent replaces the message of a terminal daemon error (which may
// carry exit details) with a fixed one per failure kind.
func (s *Server) sanitizeEvent(e wire.Event) wire.Event {
	if !isTerminalError(e) {
		return e
	}
	c := e
	c.Data = &wire.Error{Message: s.sanitizeMessage(e.Data.(*wire.Error).Message)}
	return c
}

func (s *Server) sanitizeMessage(msg string) string {
	switch {
	case len(msg) >= len("harness turn exceeded") && msg[:len("harness turn exceeded")] == "harness turn exceeded":
		return msg
	case msg == session.ErrEpisodeDone.Error() || msg == session.ErrNoEpisode.Error():
		return "harness process is not running"
	}
	return "harness turn failed"
}
