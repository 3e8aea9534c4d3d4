package evaljob

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/harnessd/harnessd/internal/termtext"
)

// Terminal shows a job's progress: on a terminal, one line
// redrawn in place (and every second, for the elapsed time); otherwise a
// line on the log per finished trial.
type Terminal struct {
	tty  *os.File // stdout when it is a terminal
	log  io.Writer
	mu   sync.Mutex
	last Progress
	seen bool
}

// NewTerminal shows progress on stdout when it is a terminal, else a
// line per finished trial on log.
func NewTerminal(stdout *os.File, log io.Writer) *Terminal {
	p := &Terminal{log: log}
	if term.IsTerminal(int(stdout.Fd())) {
		p.tty = stdout
	}
	return p
}

// Update is Options.Progress.
func (p *Terminal) Update(pr Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.seen = pr, true
	if p.tty != nil {
		p.draw()
		return
	}
	if r := pr.Finished; r != nil {
		// The trial's error holds a harness's text (its failure, its
		// stderr tail): escaped, it cannot forge a line or act on the
		// terminal.
		trial := termtext.Escape(r.Trial)
		if r.Reward != nil {
			fmt.Fprintf(p.log, "trial %s: reward %g (%s) [%d/%d]\n", trial, *r.Reward, ms(r.DurationMS), pr.Done, pr.Total)
		} else {
			fmt.Fprintf(p.log, "trial %s: no reward: %s: %s [%d/%d]\n", trial, r.ErrorType, termtext.Escape(r.Error), pr.Done, pr.Total)
		}
	}
}

// draw redraws the terminal line (p.mu held).
func (p *Terminal) draw() {
	w, _, err := term.GetSize(int(p.tty.Fd()))
	if err != nil || w <= 0 {
		w = 80
	}
	fmt.Fprintf(p.tty, "\r%s\x1b[K", ProgressLine(p.last, time.Now(), w-1))
}

// Tick redraws the line every second until the returned stop is called.
func (p *Terminal) Tick() (stop func()) {
	if p.tty == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.mu.Lock()
				if p.seen {
					p.draw()
				}
				p.mu.Unlock()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Done ends the progress line, leaving its last state on the terminal.
func (p *Terminal) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty != nil && p.seen {
		p.draw()
		fmt.Fprintln(p.tty)
	}
}

// ms prints a duration in milliseconds as a time.Duration does.
func ms(v float64) string {
	return (time.Duration(v * float64(time.Millisecond))).Round(time.Millisecond).String()
}
