package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/server"
)

// defaultIdleTimeout ends sessions no socket holds (HTTP and /mcp-created
// ones) after this long without activity, so that a stray POST /reset
// cannot hold a slot forever.
const defaultIdleTimeout = "10m"

// drainFlags choose what a drain does with running turns.
type drainFlags struct {
	policy string
}

func (f *drainFlags) register(fs *pflag.FlagSet) {
	choiceVar(fs, &f.policy, "drain-policy", string(server.DrainFinish), []string{string(server.DrainFinish), string(server.DrainCancel)},
		"on SIGTERM, running turns: finish (answered if they end within the drain timeout) or cancel (abandoned at once)")
}

// options returns the drain policy and how long running turns may take:
// the drain timeout less the harness's stop grace and a margin, so that
// stopping the trees still fits in the drain timeout.
func (f *drainFlags) options(drainTimeout, stopGrace time.Duration) (server.DrainPolicy, time.Duration, error) {
	p, err := server.ParseDrainPolicy(f.policy)
	if err != nil {
		return "", 0, fmt.Errorf("--drain-policy: %w", err)
	}
	finish := drainTimeout - stopGrace - 2*time.Second
	if finish < drainTimeout/2 {
		finish = drainTimeout / 2
	}
	return p, finish, nil
}
