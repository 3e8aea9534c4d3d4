package main

import (
	"io"

	"github.com/harnessd/harnessd/harness"
	pp "github.com/harnessd/harnessd/internal/printer"
)

// printer renders events and observations for people (shared with the
// demo in internal/printer).
type printer struct{ p *pp.Printer }

func newPrinter(w io.Writer) *printer { return &printer{p: pp.New(w)} }

func (p *printer) event(e harness.Event) { p.p.Event(e) }

func (p *printer) observation(label string, o *harness.Observation) { p.p.Observation(label, o) }

func compact(v any) string { return pp.Compact(v) }
