package vt

import (
	"strconv"
	"strings"
)

// screen is the window of rows at the bottom of the terminal that can
// still change. win[crow] is the cursor's row; win[0] is at screen row top.
// Invariant: top+len(win) <= height.
type screen struct {
	win        [][]rune
	crow, col  int
	top        int
	rows, cols int

	settled  []string
	replies  []byte
	paste    bool
	newlines int
	gen      uint64 // counts the writes that may change the rows or the cursor
}

func (s *screen) height() int {
	switch {
	case s.rows <= 0:
		return 24
	case s.rows > MaxRows:
		return MaxRows
	}
	return s.rows
}

// lastCol is the rightmost column a cursor move reaches (0-based): a
// terminal keeps its cursor within its width (80 when unset). Only text
// makes a row longer, so a few bytes of control sequence never become a
// row of blanks as long as MaxLine.
func (s *screen) lastCol() int {
	w := s.cols
	if w <= 0 {
		w = 80
	}
	return min(w, MaxLine) - 1
}

func (s *screen) ensure() {
	if len(s.win) == 0 {
		s.win = append(s.win, nil)
		s.crow = 0
	}
}

// clampWindow restores the invariant after the height shrank, settling the
// rows that no longer fit above the cursor.
func (s *screen) clampWindow() {
	s.ensure()
	s.gen++
	h := s.height()
	for s.top+len(s.win) > h {
		switch {
		case s.top > 0:
			s.top--
		case len(s.win)-1 > s.crow:
			s.win = s.win[:len(s.win)-1]
		default:
			s.settleTop()
		}
	}
}

func (s *screen) settleTop() {
	s.settled = append(s.settled, trim(s.win[0]))
	s.win = s.win[1:]
	s.crow--
}

// lineFeed moves the cursor down a row, scrolling at the bottom.
func (s *screen) lineFeed() {
	s.ensure()
	s.newlines++
	if s.top+s.crow >= s.height()-1 {
		if s.top > 0 {
			s.top--
		} else {
			s.settleTop()
		}
	}
	s.crow++
	if s.crow == len(s.win) {
		s.win = append(s.win, nil)
	}
}

// reverseIndex moves the cursor up a row, scrolling down at the top.
func (s *screen) reverseIndex() {
	s.ensure()
	if s.top+s.crow > 0 {
		s.moveRow(s.top + s.crow - 1)
		return
	}
	s.win = append([][]rune{nil}, s.win...)
	s.clampWindow()
}

// moveRow puts the cursor on screen row r (0-based), keeping the column.
func (s *screen) moveRow(r int) {
	s.ensure()
	r = min(max(r, 0), s.height()-1)
	i := r - s.top
	if i < 0 {
		// Above the window: rows already settled; write into fresh ones.
		s.win = append(make([][]rune, -i), s.win...)
		s.top, i = r, 0
	}
	for i >= len(s.win) {
		s.win = append(s.win, nil)
	}
	s.crow = i
}

func (s *screen) line() []rune { return s.win[s.crow] }

// put writes a printable character at the cursor.
func (s *screen) put(r rune) {
	s.ensure()
	s.gen++
	if s.col >= MaxLine {
		s.col = 0
		s.lineFeed()
	}
	l := s.line()
	for len(l) < s.col {
		l = append(l, ' ')
	}
	if s.col < len(l) {
		l[s.col] = r
	} else {
		l = append(l, r)
	}
	s.win[s.crow] = l
	s.col++
}

// control executes a C0 control.
func (s *screen) control(r rune) {
	s.ensure()
	if strings.ContainsRune("\r\n\v\f\b\t", r) {
		s.gen++
	}
	switch r {
	case '\r':
		s.col = 0
	case '\n', 0x0b, 0x0c: // LF, VT, FF
		s.lineFeed()
	case '\b':
		if s.col > 0 {
			s.col--
		}
	case '\t':
		s.col = min((s.col/8+1)*8, MaxLine)
	}
	// BEL, NUL, SO, SI and the rest have no textual effect.
}

// escape executes ESC F (no intermediates).
func (s *screen) escape(r rune) {
	s.ensure()
	if strings.ContainsRune("DEMc", r) {
		s.gen++
	}
	switch r {
	case 'D': // IND
		s.lineFeed()
	case 'E': // NEL
		s.col = 0
		s.lineFeed()
	case 'M': // RI
		s.reverseIndex()
	case 'c': // RIS: full reset
		s.paste = false
		s.col = 0
	}
	// ESC 7, ESC 8, ESC =, ESC > and the rest do not change text.
}

// csi executes a complete control sequence CSI params final; private is
// the leading private marker ('?', '>', ...) or 0.
func (s *screen) csi(private byte, args []int, final byte) {
	s.ensure()
	arg := func(i, def int) int {
		if i < len(args) && args[i] > 0 {
			return args[i]
		}
		return def
	}
	if private != 0 {
		if private == '?' && (final == 'h' || final == 'l') {
			for _, a := range args {
				if a == 2004 {
					s.paste = final == 'h'
				}
			}
		}
		if private == '?' && final == 'n' && arg(0, 0) == 6 { // DECXCPR
			s.reportCursor("?")
		}
		return
	}
	if strings.IndexByte(textFinals, final) >= 0 {
		s.gen++
	}
	row := s.top + s.crow
	switch final {
	case 'K': // EL: erase in line
		s.eraseLine(arg(0, 0))
	case 'J': // ED: erase in display
		switch arg(0, 0) {
		case 0:
			s.eraseLine(0)
			s.win = s.win[:s.crow+1]
		case 1:
			for i := range s.win[:s.crow] {
				s.win[i] = nil
			}
			s.eraseLine(1)
		default:
			for i := range s.win {
				s.win[i] = nil
			}
		}
	case 'X': // ECH: erase characters
		l := s.line()
		for i := s.col; i < s.col+arg(0, 1) && i < len(l); i++ {
			l[i] = ' '
		}
	case 'P': // DCH: delete characters
		if l := s.line(); s.col < len(l) {
			end := min(s.col+arg(0, 1), len(l))
			s.win[s.crow] = append(l[:s.col], l[end:]...)
		}
	case '@': // ICH: insert blanks
		if l := s.line(); s.col < len(l) {
			n := min(arg(0, 1), MaxLine-len(l), s.lastCol()+1)
			s.win[s.crow] = append(l[:s.col], append([]rune(strings.Repeat(" ", n)), l[s.col:]...)...)
		}
	case 'L': // IL: insert lines
		n := min(arg(0, 1), s.height())
		s.win = append(s.win[:s.crow], append(make([][]rune, n), s.win[s.crow:]...)...)
		s.col = 0
		s.clampWindow()
	case 'M': // DL: delete lines
		end := min(s.crow+arg(0, 1), len(s.win))
		s.win = append(s.win[:s.crow], s.win[end:]...)
		if s.crow == len(s.win) {
			s.win = append(s.win, nil)
		}
		s.col = 0
	case 'C', 'a': // CUF, HPR
		s.col = min(s.col+arg(0, 1), max(s.col, s.lastCol()))
	case 'D': // CUB
		s.col = max(s.col-arg(0, 1), 0)
	case 'G', '`': // CHA, HPA
		s.col = min(arg(0, 1)-1, s.lastCol())
	case 'H', 'f': // CUP
		s.moveRow(arg(0, 1) - 1)
		s.col = min(arg(1, 1)-1, s.lastCol())
	case 'A': // CUU
		s.moveRow(row - arg(0, 1))
	case 'B', 'e': // CUD, VPR
		s.moveRow(row + arg(0, 1))
	case 'E': // CNL
		s.moveRow(row + arg(0, 1))
		s.col = 0
	case 'F': // CPL
		s.moveRow(row - arg(0, 1))
		s.col = 0
	case 'd': // VPA
		s.moveRow(arg(0, 1) - 1)
	case 'n': // DSR
		switch arg(0, 0) {
		case 5:
			s.replies = append(s.replies, "\x1b[0n"...)
		case 6:
			s.reportCursor("")
		}
	case 'c': // DA: primary device attributes
		if arg(0, 0) == 0 {
			s.replies = append(s.replies, "\x1b[?1;2c"...)
		}
	}
	// SGR (m), modes (h, l), scrolling regions, tabs and the rest do not
	// change text.
}

// textFinals are the final bytes of the control sequences (without a
// private marker) that change text or move the cursor: the cases of csi.
const textFinals = "KJXP@LMCaDG`HfABeEFd"

func (s *screen) eraseLine(mode int) {
	l := s.line()
	switch mode {
	case 0:
		if s.col < len(l) {
			s.win[s.crow] = l[:s.col]
		}
	case 1:
		for i := 0; i <= s.col && i < len(l); i++ {
			l[i] = ' '
		}
	case 2:
		s.win[s.crow] = l[:0]
	}
}

func (s *screen) reportCursor(private string) {
	col := s.col + 1
	if s.cols > 0 {
		col = min(col, s.cols)
	}
	s.replies = append(s.replies, "\x1b["+private+strconv.Itoa(s.top+s.crow+1)+";"+strconv.Itoa(col)+"R"...)
}
