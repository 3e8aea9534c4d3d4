// Package exposure owns what the sandboxes of one session show of the
// host (View): the host paths every sandbox hides (the workspace root, the
// record directory, the daemon's HOME and temporary directory, its token
// and configuration files); what the harness, or a side process, needs
// from under them, bound back read-only (its program, its arguments, PATH,
// what package execpath resolves the command to, sandbox.read_only), with
// the untraversable directories covered so the binds have a way in, and
// what is never bound; and, for a harness that failed to start, which of
// the paths its message names the sandbox keeps from it, why, and which
// knob changes that (Explain).
//
// It must not touch a sandbox or an episode: it only reads the host's file
// system and the configuration, and package episode turns its answers into
// a sandbox's configuration.
package exposure
