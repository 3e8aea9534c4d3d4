package session

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxEpisodeIDLength bounds a client-chosen episode id, in characters.
const MaxEpisodeIDLength = 255

// TextError says what is wrong with a string a client sent.
type TextError struct {
	// TooLong is set when the string has more than Max characters.
	TooLong bool
	// Max is the length limit, in characters.
	Max int
	// Rune is the offending character (utf8.RuneError for invalid UTF-8)
	// when the string is not too long.
	Rune rune
	// Offset is the byte offset of Rune.
	Offset int
}

func (e *TextError) Error() string {
	switch {
	case e.TooLong:
		return fmt.Sprintf("String should have at most %d characters", e.Max)
	case e.Rune == utf8.RuneError:
		return fmt.Sprintf("String should be valid UTF-8 (invalid byte at offset %d)", e.Offset)
	}
	return fmt.Sprintf("String should not contain control characters (%U at byte %d)", e.Rune, e.Offset)
}

// CheckText validates a client string: valid UTF-8, no NUL or other control
// character (C0, DEL, C1) — except tab, newline and carriage return when
// multiline, where they are content (a message's text) — and at most max
// characters (0: no limit). It returns nil for a good string.
func CheckText(s string, max int, multiline bool) *TextError {
	n := 0
	for i, r := range s {
		n++
		switch {
		case r == utf8.RuneError:
			if _, w := utf8.DecodeRuneInString(s[i:]); w == 1 {
				return &TextError{Rune: r, Offset: i}
			}
		case multiline && (r == '\t' || r == '\n' || r == '\r'):
		case unicode.IsControl(r):
			return &TextError{Rune: r, Offset: i}
		}
	}
	if max > 0 && n > max {
		return &TextError{TooLong: true, Max: max}
	}
	return nil
}

// CheckEpisodeID validates a client-chosen episode id ("" is allowed: a new
// id is made). The id names files and goes into the harness's environment,
// where a NUL or control character would fail deep inside start-up.
func CheckEpisodeID(id string) error {
	if e := CheckText(id, MaxEpisodeIDLength, false); e != nil {
		return fmt.Errorf("episode_id: %w", e)
	}
	return nil
}
