package vt

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// view is what a caller reads of a Text per write.
type view struct {
	window        []string
	pending, till string
	newlines      int
}

func look(tx *Text) view {
	return view{tx.Window(), tx.Pending(), tx.BeforeCursor(), tx.Newlines()}
}

func (v view) equal(w view) bool {
	return slices.Equal(v.window, w.window) && v.pending == w.pending && v.till == w.till && v.newlines == w.newlines
}

// Bells, styles, queries and strings leave the generation as it is; text,
// cursor moves, erasures, line feeds and Settle change it. Whatever the
// writes, an unchanged generation means an unchanged Window, Pending,
// BeforeCursor and Newlines (what the pty adapter compares per chunk).
func TestGenerationCountsChanges(t *testing.T) {
	var tx Text
	tx.SetSize(5, 20)
	tx.WriteString("a\r\nb")
	g := tx.Generation()
	for _, quiet := range []string{"\a", "\x1b[1;31m", "\x1b[6n", "\x1b]0;title\a", "\x1b[?2004h", "\x1b(B", "\x00"} {
		tx.WriteString(quiet)
		if tx.Generation() != g {
			t.Errorf("%q changed the generation", quiet)
		}
		g = tx.Generation()
	}
	for _, change := range []string{"x", "\r", "\n", "\b", "\t", "\x1b[A", "\x1b[K", "\x1b[2J", "\x1b[5G", "\x1bM", "\x1bE"} {
		tx.WriteString(change)
		if tx.Generation() == g {
			t.Errorf("%q left the generation as it was", change)
		}
		g = tx.Generation()
	}
	tx.Settle()
	if tx.Generation() == g {
		t.Error("Settle left the generation as it was")
	}

	alphabet := []string{"x", "yz", "\r", "\n", "\b", "\t", "\a", "\x1b[A", "\x1b[B", "\x1b[C", "\x1b[3D", "\x1b[K",
		"\x1b[1K", "\x1b[2K", "\x1b[J", "\x1b[1J", "\x1b[2J", "\x1b[X", "\x1b[P", "\x1b[@", "\x1b[L", "\x1b[M",
		"\x1b[3;4H", "\x1b[7G", "\x1b[2d", "\x1bM", "\x1bD", "\x1b[m", "\x1b[6n", "\x1b]x\a", "\x1b[?25l", "é"}
	r := rand.New(rand.NewPCG(1, 2))
	var fz Text
	fz.SetSize(6, 30)
	prev, pg := look(&fz), fz.Generation()
	for i := range 20000 {
		fz.WriteString(alphabet[r.IntN(len(alphabet))])
		if r.IntN(200) == 0 {
			fz.Settle()
		}
		fz.TakeLines()
		now := look(&fz)
		if fz.Generation() == pg && !now.equal(prev) {
			t.Fatalf("write %d changed what a caller reads (%+v -> %+v) but not the generation", i, prev, now)
		}
		prev, pg = now, fz.Generation()
	}
}
