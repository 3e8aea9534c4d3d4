package server

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/harnessd/harnessd/server/trainer"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// Error codes of OpenEnv's /ws protocol.
const (
	codeInvalidJSON     = "INVALID_JSON"
	codeUnknownType     = "UNKNOWN_TYPE"
	codeValidation      = "VALIDATION_ERROR"
	codeExecution       = "EXECUTION_ERROR"
	codeCapacity        = "CAPACITY_REACHED"
	codeFactory         = "FACTORY_ERROR"
	codeSession         = "SESSION_ERROR"
	frameTypeReset      = "reset"
	frameTypeStep       = "step"
	frameTypeState      = wire.FrameState
	frameTypeClose      = "close"
	frameTypeMCP        = wire.FrameMCP
	frameTypeError      = wire.FrameError
	frameTypeObs        = wire.FrameObservation
	frameTypeMessage    = "message"
	frameTypeCancel     = "cancel"
	frameTypeProtoError = wire.FrameProtocolError
)

// wireError is an error answered to a client: an error frame's data.
type wireError wire.ErrorData

func (e *wireError) Error() string { return e.Code + ": " + e.Message }

// frame returns the error frame of type typ (error or protocol_error).
func (e *wireError) frame(typ string) wire.Frame[wire.ErrorData] {
	return wire.Frame[wire.ErrorData]{Type: typ, Data: wire.ErrorData(*e)}
}

// fieldError is one pydantic-style validation error.
type fieldError = wire.FieldError

func invalid(errs ...fieldError) *wireError {
	return &wireError{Message: "Invalid message", Code: codeValidation, Errors: errs}
}

// frame is a decoded client frame.
type frame struct {
	Type string
	Data json.RawMessage // nil when absent
	Raw  map[string]json.RawMessage
}

// rawInput turns bytes back into a value for error reports; a long value
// is quoted as the start of its text, so that an error frame does not
// repeat a large frame.
func rawInput(b []byte) any {
	if len(b) > maxEchoedInput {
		return echoInput(string(b[:maxEchoedInput+utf8.UTFMax]))
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	return v
}

// parseObject decodes a JSON object frame, answering INVALID_JSON or a
// validation error for anything else. Objects, the common case, are
// decoded once.
func parseObject(b []byte) (map[string]json.RawMessage, *wireError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err == nil && raw != nil {
		return raw, nil
	}
	// Validated without building its values (a frame of 64 MiB of zeros
	// decoded into Go values is 2.6 GB), and echoed within maxEchoedInput.
	if err := json.Unmarshal(b, new(json.RawMessage)); err != nil {
		return nil, &wireError{Message: "Invalid JSON: " + err.Error(), Code: codeInvalidJSON}
	}
	return nil, invalid(fieldError{Type: "model_type", Loc: []any{}, Msg: "Input should be a valid dictionary", Input: rawInput(b)})
}

// parseWSFrame validates a /ws frame's envelope.
func parseWSFrame(b []byte) (frame, *wireError) {
	raw, werr := parseObject(b)
	if werr != nil {
		return frame{}, werr
	}
	var f frame
	f.Raw = raw
	if t, ok := raw["type"]; ok {
		if err := json.Unmarshal(t, &f.Type); err != nil {
			return f, invalid(fieldError{Type: "string_type", Loc: []any{"type"}, Msg: "Input should be a valid string", Input: rawInput(t)})
		}
	}
	switch f.Type {
	case frameTypeReset, frameTypeStep, frameTypeState, frameTypeClose, frameTypeMCP, frameTypeExport, trainer.FrameType, wire.FrameFork:
	default:
		return f, &wireError{Message: "Unknown message type: " + f.Type, Code: codeUnknownType}
	}
	for k := range raw {
		if k != "type" && k != "data" {
			return f, invalid(fieldError{Type: "extra_forbidden", Loc: []any{k}, Msg: "Extra inputs are not permitted", Input: rawInput(raw[k])})
		}
	}
	if d, ok := raw["data"]; ok && !bytes.Equal(d, []byte("null")) {
		f.Data = d
	}
	return f, nil
}

// parseAction validates a step's data as a harness action: {"message": str,
// "metadata": {}} with no other keys; the message may hold tabs and
// newlines but no other control characters. Of the metadata, the client's
// own, the daemon keeps the keys it reads (actionMetadata).
func parseAction(data json.RawMessage, loc ...any) (wire.Action, *wireError) {
	var a wire.Action
	if data == nil {
		return a, invalid(fieldError{Type: "missing", Loc: append(loc, "data"), Msg: "Field required", Input: nil})
	}
	raw, werr := parseObject(data)
	if werr != nil {
		if werr.Code == codeValidation {
			werr.Errors[0].Loc = append(loc, "data")
		}
		return a, werr
	}
	var errs []fieldError
	msg, ok := raw["message"]
	switch {
	case !ok:
		errs = append(errs, fieldError{Type: "missing", Loc: append(loc, "message"), Msg: "Field required", Input: rawInput(data)})
	case json.Unmarshal(msg, &a.Message) != nil || bytes.Equal(msg, []byte("null")):
		errs = append(errs, fieldError{Type: "string_type", Loc: append(loc, "message"), Msg: "Input should be a valid string", Input: rawInput(msg)})
	default:
		// Tabs and newlines are a message's content; other control
		// characters (NUL first) are not.
		if fe := textFieldError(a.Message, 0, true, append(loc, "message")...); fe != nil {
			errs = append(errs, *fe)
		}
	}
	if md, ok := raw["metadata"]; ok && !bytes.Equal(md, []byte("null")) {
		if a.Metadata, ok = actionMetadata(md); !ok {
			errs = append(errs, fieldError{Type: "dict_type", Loc: append(loc, "metadata"), Msg: "Input should be a valid dictionary", Input: rawInput(md)})
		}
	}
	for k, v := range raw {
		if k != "message" && k != "metadata" {
			errs = append(errs, fieldError{Type: "extra_forbidden", Loc: append(loc, k), Msg: "Extra inputs are not permitted", Input: rawInput(v)})
		}
	}
	if len(errs) > 0 {
		return a, invalid(errs...)
	}
	return a, nil
}

// actionMetadata reads an action's metadata, which must be an object: the
// keys the daemon uses (session.SubmitKey, session.PlayKey) with a boolean
// value; the rest is the client's own, validated and not decoded into Go
// values (8 MiB of zeros under a key of its own allocated 338 MiB).
func actionMetadata(md []byte) (map[string]any, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(md, &fields) != nil || fields == nil {
		return nil, false
	}
	m := map[string]any{}
	for _, k := range []string{session.SubmitKey, session.PlayKey} {
		var b bool
		if v, ok := fields[k]; ok && json.Unmarshal(v, &b) == nil {
			m[k] = b
		}
	}
	return m, true
}

// parseStepFast reads the usual step frame, {"type":"step","data":
// {"message":"..."}} with a message of plain text, with one validating scan
// and no map (issue 28: the client frame was decoded twice, into a map at
// each level). ok is false for any other frame, which parseWSFrame and
// parseAction then judge (the same way for this one).
func parseStepFast(b []byte) (a wire.Action, ok bool) {
	if !json.Valid(b) {
		return a, false
	}
	var typ, data, msg []byte
	if !wire.ObjectFields(b, func(k, v []byte) bool {
		switch {
		case string(k) == "type" && typ == nil:
			typ = v
		case string(k) == "data" && data == nil:
			data = v
		default:
			return false
		}
		return true
	}) || string(typ) != `"step"` || data == nil {
		return a, false
	}
	if !wire.ObjectFields(data, func(k, v []byte) bool {
		if string(k) != "message" || msg != nil {
			return false
		}
		msg = v
		return true
	}) || msg == nil {
		return a, false
	}
	text, plain := wire.PlainString(msg)
	if !plain || textFieldError(text, 0, true, "message") != nil {
		return a, false
	}
	return wire.Action{Message: text}, true
}

// parseReset validates reset data: seed (int >= 0 or null), episode_id
// (string of at most 255 characters without control characters, or null),
// task_id and task_index (tasks.go), full_token_ids (bool or null), at_turn (int >= 1 or null: reset to the episode's state after that turn); other keys are accepted and ignored,
// as reset keyword arguments are.
func parseReset(data json.RawMessage) (session.ResetOptions, *wireError) {
	var o session.ResetOptions
	if data == nil {
		return o, nil
	}
	raw, werr := parseObject(data)
	if werr != nil {
		return o, werr
	}
	var errs []fieldError
	if s, ok := raw["seed"]; ok && !bytes.Equal(s, []byte("null")) {
		var seed int64
		if err := json.Unmarshal(s, &seed); err != nil {
			errs = append(errs, fieldError{Type: "int_type", Loc: []any{"seed"}, Msg: "Input should be a valid integer", Input: rawInput(s)})
		} else if seed < 0 {
			errs = append(errs, fieldError{Type: "greater_than_equal", Loc: []any{"seed"}, Msg: "Input should be greater than or equal to 0", Input: seed})
		} else {
			o.Seed = &seed
		}
	}
	if e, ok := raw["episode_id"]; ok && !bytes.Equal(e, []byte("null")) {
		if err := json.Unmarshal(e, &o.EpisodeID); err != nil {
			errs = append(errs, fieldError{Type: "string_type", Loc: []any{"episode_id"}, Msg: "Input should be a valid string", Input: rawInput(e)})
		} else if fe := textFieldError(o.EpisodeID, session.MaxEpisodeIDLength, false, "episode_id"); fe != nil {
			errs = append(errs, *fe)
		}
	}
	errs = append(append(append(errs, parseTaskKwargs(raw, &o)...), trainer.ResetKwargs(raw, &o.Sampling, &o.PolicyVersion)...), trainer.FullTokenIDsKwarg(raw, &o.FullTokenIDs)...)
	errs = append(errs, trainer.AtTurnKwarg(raw, &o.AtTurn)...)
	if len(errs) > 0 {
		return o, invalid(errs...)
	}
	return o, nil
}
