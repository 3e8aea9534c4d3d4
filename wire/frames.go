package wire

// Frame types of the server's /ws and /harness streams (OpenEnv's generic
// protocol plus harnessd's /harness stream). Event frames on /harness are
// the events themselves.
const (
	FrameObservation    = "observation"     // a reset's or step's observation (/ws)
	FrameState          = "state"           // the session's State (/ws)
	FrameMCP            = "mcp"             // a JSON-RPC answer (/ws)
	FrameError          = "error"           // an ErrorData (/ws, /harness)
	FrameSessionStarted = "session_started" // a SessionStarted (/harness)
	FrameProtocolError  = "protocol_error"  // an ErrorData for a bad client frame (/harness)
)

// Frame is one server frame: {"data": …, "type": …}. The keys are in the
// order harnessd has always written them (sorted); observation frames are
// written {"type":"observation","data":…} by the one-pass encoder.
type Frame[T any] struct {
	// Data is the frame's payload.
	Data T `json:"data"`
	// Type is one of the Frame* constants.
	Type string `json:"type"`
}

// ErrorData is the data of an error or protocol_error frame. Its fields are
// in key order, the order harnessd has always written them in.
type ErrorData struct {
	// ActiveSessions is the number of sessions running (CAPACITY_REACHED).
	ActiveSessions *int `json:"active_sessions,omitempty"`
	// Code classifies the error (INVALID_JSON, VALIDATION_ERROR, ...).
	Code string `json:"code"`
	// Errors are the validation errors of a VALIDATION_ERROR.
	Errors []FieldError `json:"errors,omitempty"`
	// FactoryName names the environment whose factory failed (FACTORY_ERROR).
	FactoryName string `json:"factory_name,omitempty"`
	// MaxSessions is the session limit (CAPACITY_REACHED).
	MaxSessions *int `json:"max_sessions,omitempty"`
	// Message says what went wrong.
	Message string `json:"message"`
}

// FieldError is one pydantic-style validation error of a client frame.
type FieldError struct {
	// Type is pydantic's error type (missing, string_type, extra_forbidden, ...).
	Type string `json:"type"`
	// Loc is the path to the offending value.
	Loc []any `json:"loc"`
	// Msg says what is wrong.
	Msg string `json:"msg"`
	// Input is the offending value.
	Input any `json:"input"`
}

// SessionStarted is the data of a /harness session_started frame.
type SessionStarted struct {
	// Harness is the environment's name.
	Harness string `json:"harness"`
	// SessionID is the server's session id.
	SessionID string `json:"session_id"`
}
