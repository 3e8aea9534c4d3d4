package server

import (
	"context"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/harnessd/harnessd/server/trainer"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// handleWS serves OpenEnv's generic protocol: one session per connection
// (or, with ?session_id=, the HTTP MCP session created earlier or a fork's
// sibling), one reply frame per request, and a bad frame never ends the
// session.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	attachID := r.URL.Query().Get("session_id")
	wc, err := s.accept(w, r, surfaceWS)
	if err != nil {
		s.log.Debug("websocket upgrade failed", "err", err)
		return
	}
	s.conns.Add(1)
	defer s.conns.Done()

	m, werr := s.wsSession(attachID)
	if werr != nil {
		wc.send(werr.frame(frameTypeError))
		wc.close(websocket.StatusPolicyViolation, werr.Message)
		return
	}
	why := "client closed the connection"
	var once sync.Once
	end := func() {
		once.Do(func() {
			m.attached.Store(false)
			if attachID == "" || m.closing.Load() {
				s.destroy(m, why)
			}
		})
	}
	defer end()

	for {
		select {
		case in := <-wc.frames:
			if in.tooBig > 0 {
				s.sendError(wc, tooBigError(in))
				continue
			}
			more := s.handleWSFrame(wc, m, in.data)
			wc.release(in)
			if !more {
				// The session's slot is free before the close handshake
				// completes (the reader holds the peer's close frame until
				// then), so a client may reconnect at once; stopping its
				// harness follows.
				why = "client sent close"
				var finish func(string)
				once.Do(func() {
					m.attached.Store(false)
					if closeEnds(m, attachID) {
						finish = s.detach(m)
					}
				})
				wc.close(websocket.StatusNormalClosure, "session closed")
				if finish != nil {
					finish(why)
				}
				return
			}
			if wc.peerGone() {
				why = wc.goneReason()
				return
			}
		case <-wc.gone:
			why = wc.goneReason()
			return
		case <-s.quit:
			why = "server shutting down"
			wc.close(websocket.StatusGoingAway, "server shutting down")
			return
		}
	}
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
		wc.sendRaw(s.observationFrame(s.present(obs)))
		replied()
	case frameTypeStep:
		a, werr := parseAction(f.Data)
		if werr != nil {
			s.sendError(wc, werr)
			return true
		}
		obs, err := s.step(ctx, m, a, nil)
		if err != nil {
			s.sendError(wc, s.execError(err))
			return true
		}
		bounded := obs.Metadata.Truncated != nil
		wc.sendRaw(s.observationFrame(s.present(obs)))
		if bounded {
			releaseFloodMemory()
		}
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
