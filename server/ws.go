package server

import (
	"context"
	"net/http"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/server/trainer"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// handleWS serves OpenEnv's generic protocol: one session per connection
// (or, with ?session_id=, the HTTP MCP session created earlier or a fork's
// sibling), one reply frame per request, and a bad frame never ends the
// session. Frames run on
// the goroutine that read them (wsLoop); this handler's goroutine is the
// first reader and may return before the connection ends.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	attachID := r.URL.Query().Get("session_id")
	wc, err := s.accept(w, r, surfaceWS)
	if err != nil {
		s.log.Debug("websocket upgrade failed", "err", err)
		return
	}
	s.conns.Add(1)
	m, werr := s.wsSession(attachID)
	if werr != nil {
		wc.send(werr.frame(frameTypeError))
		wc.close(websocket.StatusPolicyViolation, werr.Message)
		wc.stopReading(nil)
		s.conns.Done()
		return
	}
	// A dropped connection ends the session it made (or one being closed);
	// a close request also ends an attached fork's sibling (closeEnds).
	owned := func() bool { return attachID == "" || m.closing.Load() }
	end := func(why string) {
		defer s.conns.Done()
		m.attached.Store(false)
		switch why {
		case "":
			// A close request: the session's slot is free before the
			// close handshake completes (nothing is read until then), so
			// a client may reconnect at once; stopping its harness
			// follows.
			var finish func(string)
			if closeEnds(m, attachID) {
				finish = s.detach(m)
			}
			wc.close(websocket.StatusNormalClosure, "session closed")
			if finish != nil {
				finish("client sent close")
			}
			return
		case "server shutting down":
			wc.close(websocket.StatusGoingAway, why)
		}
		if owned() {
			s.destroy(m, why)
		}
	}
	handle := func(in inbound) bool {
		if in.tooBig > 0 {
			s.sendError(wc, tooBigError(in))
			return true
		}
		more := s.handleWSFrame(wc, m, in.data)
		wc.release(in)
		return more
	}
	l := newWSLoop(wc, s.followers, handle, end)
	l.watchQuit(s.quitCtx)
	l.run()
}

// wsSession creates the connection's session, or attaches to an existing
// MCP session.
func (s *Server) wsSession(attachID string) (*managed, *wireError) {
	if attachID == "" {
		m, err := s.create(kindWS)
		if err != nil {
			return nil, s.execError(err)
		}
		m.attached.Store(true)
		return m, nil
	}
	if werr := checkSessionID(attachID, "query", "session_id"); werr != nil {
		return nil, werr
	}
	m := s.reg.get(attachID)
	switch {
	case m == nil:
		return nil, &wireError{Message: "Unknown session_id: " + attachID, Code: codeSession}
	case !attachable(m.kind):
		return nil, &wireError{Message: "Session " + attachID + " cannot be attached", Code: codeSession}
	case !m.attached.CompareAndSwap(false, true):
		return nil, &wireError{Message: "Session " + attachID + " is already attached", Code: codeSession}
	}
	return m, nil
}

func (s *Server) sendError(wc *wsConn, e *wireError) {
	wc.send(e.frame(frameTypeError))
}

// handleWSFrame answers one frame; it returns false for a close request.
func (s *Server) handleWSFrame(wc *wsConn, m *managed, data []byte) bool {
	if a, ok := parseStepFast(data); ok {
		s.stepFrame(wc, m, a)
		return true
	}
	f, werr := parseWSFrame(data)
	if werr != nil {
		s.sendError(wc, werr)
		return true
	}
	ctx := wc.turnCtx // a turn is abandoned when the client goes away or asks to close
	switch f.Type {
	case frameTypeClose:
		return false
	case frameTypeState:
		wc.send(wire.Frame[wire.State]{Type: frameTypeState, Data: m.sess.State()})
	case frameTypeReset:
		opts, werr := parseReset(f.Data)
		if werr == nil {
			werr = s.checkTaskChoice(opts)
		}
		if werr != nil {
			s.sendError(wc, werr)
			return true
		}
		// The reset's background work (retiring the previous episode,
		// preparing the next) starts once its reply is out.
		rctx, replied := session.AfterReply(ctx)
		obs, err := s.reset(rctx, m, opts)
		if err != nil {
			replied()
			s.sendError(wc, s.execError(err))
			return true
		}
		s.sendObservation(wc, obs)
		replied()
	case frameTypeStep:
		a, werr := parseAction(f.Data)
		if werr != nil {
			s.sendError(wc, werr)
			return true
		}
		s.stepFrame(wc, m, a)
	case frameTypeMCP:
		wc.send(wire.Frame[map[string]any]{Type: frameTypeMCP, Data: s.mcpRequest(context.WithoutCancel(ctx), f.Data, m)})
	case frameTypeExport:
		s.handleExportFrame(wc, m, f.Data)
	case trainer.FrameType:
		wc.send(trainer.Reply(f.Data, m.sess, s.trainer.Daemon))
	case wire.FrameFork:
		s.handleForkFrame(ctx, wc, m, f.Data)
	}
	return true
}

// stepFrame runs a step frame's turn and answers with its observation.
func (s *Server) stepFrame(wc *wsConn, m *managed, a wire.Action) {
	obs, err := s.step(wc.turnCtx, m, a, nil) // abandoned when the client goes away or asks to close
	if err != nil {
		s.sendError(wc, s.execError(err))
		return
	}
	bounded := obs.Metadata.Truncated != nil
	s.sendObservation(wc, obs)
	if bounded {
		releaseFloodMemory()
	}
}
