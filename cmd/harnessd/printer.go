package main

import (
	"io"

	pp "github.com/harnessd/harnessd/internal/printer"
	"github.com/harnessd/harnessd/wire"
)

// printer renders events and observations for people (shared with the
// demo in internal/printer).
type printer struct{ p *pp.Printer }

func newPrinter(w io.Writer) *printer { return &printer{p: pp.New(w)} }

func (p *printer) event(e wire.Event) { p.p.Event(e) }

func (p *printer) observation(label string, o *wire.Observation) { p.p.Observation(label, o) }

func compact(v any) string { return pp.Compact(v) }
