package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// drainSignals start a drain in serve (and end the episode in run). SIGHUP is
// among them on purpose: as PID 1 the kernel discards every signal whose
// action is the default, and the Go runtime's own SIGHUP handling (die by
// re-raising it with the default action) therefore fails there — the daemon
// would exit with code 2, without a drain and without a word in the log.
// signal.Notify installs a real handler, so these work as PID 1 too.
var drainSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// dumpStacksOnQuit makes SIGQUIT write every goroutine's stack to stderr,
// after a log record, while the daemon keeps running — a look inside a
// wedged daemon or a slow drain without killing it. (Go's default, a dump
// followed by exit code 2, would skip the drain and, as PID 1, take the whole
// container down.) It returns a function that restores the default and waits
// for the handler goroutine to end.
func dumpStacksOnQuit(log *slog.Logger) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGQUIT)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				log.Warn("SIGQUIT: writing every goroutine's stack to stderr; the daemon keeps running")
				pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		cancel()
		<-done
	}
}
