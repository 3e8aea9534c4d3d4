package jsonl

import (
	"errors"
	"time"

	"github.com/harnessd/harnessd/harness/internal/kit"
	"github.com/harnessd/harnessd/internal/units"
)

// DefaultForkTimeout bounds the wait for a harness's answer to the fork
// message (harness.options.fork_timeout): a harness that says nothing for
// that long cannot fork by the line protocol.
const DefaultForkTimeout = 5 * time.Second

// Options are the adapter's harness.options. Unknown keys are an error.
type Options struct {
	// ForkTimeout ("fork_timeout", default 5s) bounds how long ForkState
	// waits for the harness's fork_state (or error) answer before it
	// reports the harness unable to fork.
	ForkTimeout time.Duration
}

// wireOptions is how harness.options spells Options.
type wireOptions struct {
	ForkTimeout *units.Duration `json:"fork_timeout"`
}

// ParseOptions decodes harness.options strictly and applies the defaults.
func ParseOptions(m map[string]any) (Options, error) {
	var w wireOptions
	if err := kit.DecodeOptions(m, &w); err != nil {
		return Options{}, err
	}
	o := Options{ForkTimeout: DefaultForkTimeout}
	if w.ForkTimeout != nil {
		if w.ForkTimeout.D() <= 0 {
			return Options{}, errors.New("harness.options.fork_timeout must be positive")
		}
		o.ForkTimeout = w.ForkTimeout.D()
	}
	return o, nil
}
