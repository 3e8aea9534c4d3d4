package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/harnessd/harnessd/process/sandbox/initfile"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/process/sandbox"
)

// resolveIsolation decides the level harnesses run at: --isolation, else
// the configuration's isolation:, else sandbox wherever the host allows it
// (probed once with a throwaway sandbox) and process where it does not.
// Asking for sandbox where it cannot be had is an error naming what is
// missing.
func resolveIsolation(ctx context.Context, flag string, cfg *config.Config, log *slog.Logger) (string, error) {
	want := flag
	if want == "" || want == "auto" {
		want = cfg.Isolation
	}
	switch want {
	case config.IsolationProcess:
		return want, nil
	case "", config.IsolationSandbox:
	default:
		return "", fmt.Errorf("--isolation %q: want sandbox, process or auto", want)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res := sandbox.Probe(pctx, "")
	if res.OK {
		logSandboxInit(log)
		return config.IsolationSandbox, nil
	}
	if want == config.IsolationSandbox {
		return "", fmt.Errorf("isolation: sandbox is not available on this host: %s (--isolation process accepts the weaker process boundary)", res.Detail)
	}
	if cfg.Limits.Any() || cfg.Network.EgressPolicy() == config.EgressAllow {
		return "", fmt.Errorf("the configuration sets limits or network.egress: allow, which need the sandbox, and it is not available on this host: %s", res.Detail)
	}
	log.Warn("no sandbox on this host; harnesses run in process isolation (set isolation: sandbox to refuse to start instead)", "why", res.Detail)
	return config.IsolationProcess, nil
}

// daemonFiles are the daemon's own files a sandboxed harness must not
// read: the configuration and the API token file (absolute paths).
func daemonFiles(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if a, err := filepath.Abs(p); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// logSandboxInit says which init sandboxes start: the small embedded one
// (debug), or, when it could not be written, harnessd itself (a warning:
// every sandbox then pays for the daemon's start-up).
func logSandboxInit(log *slog.Logger) {
	path, err := initfile.Status()
	switch {
	case err != nil:
		log.Warn("the small sandbox init could not be written; sandboxes re-execute harnessd as their init, which costs more per reset (TMPDIR chooses where it goes: a directory others can traverse, not mounted noexec)", "why", err)
	case path != "":
		log.Debug("sandbox init", "path", path)
	default:
		log.Debug("sandbox init", "path", "harnessd itself (built without the embedded init, or HARNESSD_SANDBOX_INIT=self)")
	}
}
