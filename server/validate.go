package server

import (
	"unicode/utf8"

	"github.com/harnessd/harnessd/session"
)

// Length limits of client strings, in characters. A message is bounded by
// the frame limit only.
const (
	maxSessionIDLength = 128
	maxRequestIDLength = 255
	maxEchoedInput     = 256 // bytes of an offending string quoted back
)

// textFieldError validates a client string at loc (see session.CheckText:
// no NUL or control characters, tab/newline/CR allowed when multiline, at
// most max characters) and returns its validation error, or nil.
func textFieldError(s string, max int, multiline bool, loc ...any) *fieldError {
	e := session.CheckText(s, max, multiline)
	if e == nil {
		return nil
	}
	typ := "string_pattern_mismatch"
	if e.TooLong {
		typ = "string_too_long"
	}
	return &fieldError{Type: typ, Loc: loc, Msg: e.Error(), Input: echoInput(s)}
}

// echoInput is the offending string as quoted back: its start when long.
func echoInput(s string) string {
	if len(s) <= maxEchoedInput {
		return s
	}
	cut := maxEchoedInput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// checkSessionID validates a client-sent session id ("" is allowed: none).
func checkSessionID(id string, loc ...any) *wireError {
	if fe := textFieldError(id, maxSessionIDLength, false, loc...); fe != nil {
		return invalid(*fe)
	}
	return nil
}
