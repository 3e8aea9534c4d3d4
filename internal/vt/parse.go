package vt

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxParams bounds the parameter bytes kept of one control sequence.
const maxParams = 64

type state uint8

const (
	ground    state = iota
	escape          // after ESC
	escInter        // ESC followed by intermediate bytes (charset designation, ...)
	csi             // control sequence: parameters, intermediates, final
	csiIgnore       // an over-long control sequence, skipped to its final byte
	str             // OSC, DCS, SOS, PM or APC string, until ST (or BEL for OSC)
	strEsc          // ESC inside a string: ST if followed by '\'
)

// parser is the ECMA-48 state machine (after the VT500 parser by Paul
// Williams), reduced to what matters for text.
type parser struct {
	st     state
	params []byte // CSI parameter and intermediate bytes
	utf    []byte // a partial UTF-8 sequence carried between writes
}

func (p *parser) feed(b []byte, s *screen) {
	if len(p.utf) > 0 {
		// A character was split by the previous write.
		b = append(p.utf, b...)
		p.utf = nil
	}
	for len(b) > 0 {
		c := b[0]
		if c < utf8.RuneSelf {
			p.rune(rune(c), s)
			b = b[1:]
			continue
		}
		if !utf8.FullRune(b) {
			p.utf = append([]byte(nil), b...)
			return
		}
		r, size := utf8.DecodeRune(b)
		p.rune(r, s)
		b = b[size:]
	}
}

// rune advances the parser by one character.
func (p *parser) rune(r rune, s *screen) {
	// C0 controls act inside escape and control sequences too, except in
	// strings, where they are part of the (ignored) payload.
	if r < 0x20 && p.st != str && p.st != strEsc {
		switch r {
		case 0x1b:
			p.st = escape
		case 0x18, 0x1a: // CAN, SUB cancel a sequence
			p.st = ground
		default:
			s.control(r)
		}
		return
	}
	switch p.st {
	case ground:
		switch {
		case r == 0x7f:
		case r >= 0x80 && r < 0xa0:
			p.c1(r, s)
		default:
			s.put(r)
		}
	case escape:
		p.escape(r, s)
	case escInter:
		if r >= 0x30 && r <= 0x7e || r > 0x7f {
			p.st = ground // final byte of ESC I.. F (e.g. ESC ( B): ignored
		}
	case csi:
		p.csiByte(r, s)
	case csiIgnore:
		if r >= 0x40 && r <= 0x7e || r > 0x7f {
			p.st = ground
		}
	case str:
		switch r {
		case 0x1b:
			p.st = strEsc
		case 0x07, 0x9c: // BEL ends OSC (xterm); ST
			p.st = ground
		}
	case strEsc:
		if r == '\\' {
			p.st = ground
			return
		}
		// ESC followed by anything else ends the string and starts a sequence.
		p.escape(r, s)
	}
}

// c1 handles 8-bit controls (as decoded characters U+0080..U+009F).
func (p *parser) c1(r rune, s *screen) {
	switch r {
	case 0x9b: // CSI
		p.st = csi
		p.params = p.params[:0]
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // OSC, DCS, SOS, PM, APC
		p.st = str
	case 0x84: // IND
		s.escape('D')
	case 0x85: // NEL
		s.escape('E')
	case 0x8d: // RI
		s.escape('M')
	}
}

func (p *parser) escape(r rune, s *screen) {
	p.st = ground
	switch {
	case r == '[':
		p.st = csi
		p.params = p.params[:0]
	case r == ']', r == 'P', r == 'X', r == '^', r == '_': // OSC, DCS, SOS, PM, APC
		p.st = str
	case r >= 0x20 && r <= 0x2f: // intermediate: charset designation etc.
		p.st = escInter
	case r >= 0x30 && r <= 0x7e:
		s.escape(r)
	}
}

func (p *parser) csiByte(r rune, s *screen) {
	switch {
	case r >= 0x20 && r <= 0x3f: // parameters and intermediates
		if len(p.params) >= maxParams {
			p.st = csiIgnore
			return
		}
		p.params = append(p.params, byte(r))
	case r >= 0x40 && r <= 0x7e:
		p.st = ground
		p.dispatch(byte(r), s)
	default:
		p.st = ground // not a valid sequence: drop it
	}
}

// dispatch parses a complete control sequence's parameters.
func (p *parser) dispatch(final byte, s *screen) {
	params := string(p.params)
	var private byte
	if params != "" && params[0] >= 0x3c && params[0] <= 0x3f {
		private, params = params[0], params[1:]
	}
	if strings.IndexFunc(params, func(r rune) bool { return r >= 0x20 && r <= 0x2f }) >= 0 {
		return // sequences with intermediates (e.g. CSI SP q) do not change text
	}
	s.csi(private, parseArgs(params), final)
}

func parseArgs(p string) []int {
	if p == "" {
		return nil
	}
	var out []int
	for _, f := range strings.FieldsFunc(p, func(r rune) bool { return r == ';' || r == ':' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			n = 0
		}
		out = append(out, min(n, 1<<20))
	}
	return out
}
