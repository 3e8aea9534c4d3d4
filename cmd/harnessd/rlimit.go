package main

import (
	"log/slog"

	"github.com/harnessd/harnessd/internal/doorcap"
)

// raiseNOFILE raises the daemon's descriptor limit to its hard limit at
// start (its children keep the limit the daemon started with) and logs the
// limit and the reserve its doors leave to /health, /ready and resets.
func raiseNOFILE(log *slog.Logger) {
	n, err := doorcap.RaiseNOFILE()
	if err != nil {
		log.Warn("could not raise the descriptor limit", "err", err)
	}
	_, threshold, _ := doorcap.Reserve()
	log.Debug("RLIMIT_NOFILE", "soft_was", n.Was, "soft", n.Soft, "hard", n.Hard,
		"door_fd_ceiling", threshold, "reserve", n.Soft-threshold, "door_max_conns", doorcap.DefaultMaxConns)
}
