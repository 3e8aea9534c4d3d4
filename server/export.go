package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/internal/recordfile"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// frameTypeExport is harnessd's /ws extension frame for the training export
// (OpenEnv's clients never send it): {"type":"export","data":{"episode_id"?}}
// is answered {"type":"export","data":EXPORT} or an error frame.
const frameTypeExport = "export"

// Reasons an episode has no training export (the 409 answer's "reason").
const (
	reasonNoModelGateway = "no_model_gateway"
	reasonEvaluation     = "evaluation_traffic"
	reasonNoTraining     = "no_training_calls"
)

// exportError is why an export cannot be given: an HTTP status, the
// reason code of an episode without training traffic, and what the
// gateway found (its calls and issues, when it had calls).
type exportError struct {
	status int
	reason string
	msg    string
	ex     *gateway.Export
}

func (e *exportError) body() map[string]any {
	b := map[string]any{"detail": e.msg}
	if e.reason != "" {
		b["reason"] = e.reason
	}
	if e.ex != nil {
		b["calls"], b["issues"] = e.ex.Calls, e.ex.Issues
	}
	return b
}

// episodeExport finds the export of episode id: from the live session whose
// current or last episode it is, else from record_dir (written at the
// episode's end).
func (s *Server) episodeExport(id string, m *managed) (json.RawMessage, *exportError) {
	if m == nil {
		for _, c := range s.reg.drainPeek() {
			if c.sess.EpisodeID() == id {
				m = c
				break
			}
		}
	}
	if m == nil {
		// A session still closing writes its export to record_dir as it
		// ends: wait for that rather than answer 404 in between.
		s.closing.Range(func(_, v any) bool {
			if c := v.(*managed); c.sess.EpisodeID() == id {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				c.sess.WaitClosed(ctx)
				cancel()
			}
			return true
		})
	}
	if m == nil {
		return s.recordedExport(id)
	}
	ex, err := m.sess.Export(id)
	switch {
	case err == nil:
		b, err := json.Marshal(ex)
		if err != nil {
			return nil, &exportError{status: http.StatusInternalServerError, msg: "encoding the export failed: " + err.Error()}
		}
		return b, nil
	case errors.Is(err, session.ErrUnknownEpisode):
		return nil, &exportError{status: http.StatusNotFound, msg: err.Error()}
	case errors.Is(err, session.ErrNoModelGateway):
		return nil, &exportError{status: http.StatusConflict, reason: reasonNoModelGateway, msg: err.Error()}
	case errors.Is(err, gateway.ErrEvaluationTraffic):
		return nil, &exportError{status: http.StatusConflict, reason: reasonEvaluation, msg: err.Error()}
	case errors.Is(err, session.ErrNoTrainingCalls):
		return nil, &exportError{status: http.StatusConflict, reason: reasonNoTraining, msg: err.Error(), ex: ex}
	default:
		return nil, &exportError{status: http.StatusInternalServerError, msg: err.Error()}
	}
}

// recordedExport is the export of an episode no session holds any more:
// its record_dir export file. An episode with a record but no export file
// ended without training traffic (no file is written then), so it is
// answered as a live one would be: 409 with the reason this daemon's model
// configuration gives. Without a record it is unknown (404).
func (s *Server) recordedExport(id string) (json.RawMessage, *exportError) {
	unknown := &exportError{status: http.StatusNotFound, msg: "unknown episode " + quote(id) + ": no session holds it and record_dir has no record of it"}
	if s.cfg.RecordDir == "" {
		return nil, unknown
	}
	exportFile := recordfile.Export(s.cfg.RecordDir, id)
	if b, err := os.ReadFile(exportFile); err == nil {
		return b, nil
	}
	record := strings.TrimSuffix(exportFile, ".export.json") + ".jsonl"
	if _, err := os.Stat(record); err != nil {
		return nil, unknown
	}
	why := "episode " + quote(id) + " has a record (" + record + ") but no export file: "
	model := &s.cfg.Harness.Model
	switch {
	case !model.Enabled():
		return nil, &exportError{status: http.StatusConflict, reason: reasonNoModelGateway, msg: why + session.ErrNoModelGateway.Error()}
	case model.UpstreamKind() != config.ModelUpstreamEngine:
		return nil, &exportError{status: http.StatusConflict, reason: reasonEvaluation, msg: why + gateway.ErrEvaluationTraffic.Error()}
	}
	return nil, &exportError{status: http.StatusConflict, reason: reasonNoTraining, msg: why +
		// The export file is written as the episode ends.
		"either it ended without a model call usable for training, or its daemon stopped before it ended " +
		"(the export file is written as an episode ends; the record keeps its calls' token ids as gateway events)"}
}

// handleExport: GET /episodes/{episode_id}/export, the training export of
// an episode (docs/gateway.md). 404 for an unknown episode, 409 with a
// reason for one without training traffic.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("episode_id")
	if id == "" || session.CheckEpisodeID(id) != nil {
		writeJSONStatus(w, http.StatusUnprocessableEntity, map[string]any{"detail": fmt.Sprintf("episode_id must be 1 to %d characters, without control characters", session.MaxEpisodeIDLength)})
		return
	}
	b, eerr := s.episodeExport(id, nil)
	if eerr != nil {
		writeJSONStatus(w, eerr.status, eerr.body())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// handleExportFrame answers a /ws export frame for the connection's
// session: its current or last episode, or data.episode_id if given.
func (s *Server) handleExportFrame(wc *wsConn, m *managed, data json.RawMessage) {
	if s.mode != Simulation {
		s.sendError(wc, &wireError{Message: "the training export is served in simulation mode only", Code: codeExecution})
		return
	}
	var req struct {
		EpisodeID string `json:"episode_id"`
	}
	if data != nil {
		if err := json.Unmarshal(data, &req); err != nil {
			s.sendError(wc, invalid(fieldError{Type: "model_type", Loc: []any{"data"}, Msg: "Input should be a valid dictionary with an optional episode_id string", Input: rawInput(data)}))
			return
		}
	}
	if req.EpisodeID == "" {
		req.EpisodeID = m.sess.EpisodeID()
	}
	b, eerr := s.episodeExport(req.EpisodeID, m)
	if eerr != nil {
		msg := eerr.msg
		if eerr.reason != "" {
			msg = eerr.reason + ": " + msg
		}
		s.sendError(wc, &wireError{Message: msg, Code: codeExecution})
		return
	}
	wc.send(wire.Frame[json.RawMessage]{Type: frameTypeExport, Data: b})
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
