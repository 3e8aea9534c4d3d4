package server

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// maxTimeoutS bounds a step's timeout_s: the largest number of seconds a
// time.Duration holds.
const maxTimeoutS = float64(math.MaxInt64) / float64(time.Second)

// parseResetBody validates a POST /reset body: the reset data plus the
// session to reset ("" for the default HTTP session).
func parseResetBody(body []byte) (session.ResetOptions, string, *wireError) {
	opts, werr := parseReset(body)
	if werr != nil {
		return opts, "", werr
	}
	var sid struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(body, &sid)
	if werr := checkSessionID(sid.SessionID, "body", "session_id"); werr != nil {
		return opts, "", werr
	}
	return opts, sid.SessionID, nil
}

// parseStepBody validates a POST /step body: {"action": {...},
// "timeout_s"?, "request_id"?, "session_id"?}. It returns the action and
// the session to step ("" for the default HTTP session).
func parseStepBody(body []byte) (wire.Action, string, *wireError) {
	raw, werr := parseObject(body)
	if werr != nil {
		return wire.Action{}, "", werr
	}
	action, ok := raw["action"]
	if !ok {
		return wire.Action{}, "", invalid(fieldError{Type: "missing", Loc: []any{"body", "action"}, Msg: "Field required", Input: rawInput(body)})
	}
	a, werr := parseAction(action, "body", "action")
	if werr != nil {
		return a, "", werr
	}
	var extra struct {
		TimeoutS  *float64 `json:"timeout_s"`
		RequestID *string  `json:"request_id"`
		SessionID string   `json:"session_id"`
	}
	if err := json.Unmarshal(body, &extra); err != nil {
		return a, "", invalid(fieldError{Type: "value_error", Loc: []any{"body"}, Msg: err.Error(), Input: rawInput(body)})
	}
	if extra.TimeoutS != nil {
		if *extra.TimeoutS <= 0 {
			return a, "", invalid(fieldError{Type: "greater_than", Loc: []any{"body", "timeout_s"}, Msg: "Input should be greater than 0", Input: *extra.TimeoutS})
		}
		// Beyond ~292 years the conversion overflows into a negative
		// duration, so such a timeout is refused rather than wrapped.
		if *extra.TimeoutS >= maxTimeoutS {
			return a, "", invalid(fieldError{Type: "less_than", Loc: []any{"body", "timeout_s"}, Msg: fmt.Sprintf("Input should be less than %g", maxTimeoutS), Input: *extra.TimeoutS})
		}
		a.Timeout = time.Duration(*extra.TimeoutS * float64(time.Second))
	}
	if extra.RequestID != nil {
		if fe := textFieldError(*extra.RequestID, maxRequestIDLength, false, "body", "request_id"); fe != nil {
			return a, "", invalid(*fe)
		}
	}
	if werr := checkSessionID(extra.SessionID, "body", "session_id"); werr != nil {
		return a, "", werr
	}
	return a, extra.SessionID, nil
}
