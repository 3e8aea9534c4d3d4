package episode

import (
	"github.com/harnessd/harnessd/episode/exposure"
	"github.com/harnessd/harnessd/harness"
)

// ResolveCommand turns on execpath's resolution of the harness command
// for the sandbox's binds (on by default). Off, a sandbox binds only the
// program's directory, the absolute paths among its arguments and the
// PATH entries: tests turn it off for their negative controls (a harness
// that starts only thanks to the resolution). Set it before sessions are
// made; it is read once per session.
var ResolveCommand = true

// view is what the session's sandboxes show of the host (package
// exposure), made at its first use from the environment's configuration,
// its hidden files and ResolveCommand.
func (e *Env) view() *exposure.View {
	e.exposeOnce.Do(func() {
		e.expose = exposure.New(e.Config, e.Hide, ResolveCommand, e.Logger)
	})
	return e.expose
}

// Exposures lists what a sandbox of this environment binds back read-only
// for the harness to run (sources of the binds, sorted) and the
// untraversable directories it covers so that those binds have a way in:
// what `harnessd check -- CMD` reports the harness needed.
func (e *Env) Exposures() (binds, covers []string, err error) { return e.view().Sources() }

// ExplainSandboxed adds to a start-up failure of a sandboxed harness what
// the sandbox keeps from it: each path its message or stderr tail names
// that is hidden or unreadable inside, why, and the knobs that change it
// (sandbox.read_only, --isolation process). It changes nothing outside a
// sandbox or when no such path is named.
func (ep *Episode) ExplainSandboxed(f *harness.Failure) {
	if ep == nil || ep.sandbox == nil || f == nil {
		return
	}
	ep.env.view().Explain(ep.dirs.Root, f)
}
