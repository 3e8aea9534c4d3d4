// Package harness is the contract between harnessd and a harness protocol:
// the Adapter interface that drives one harness process tree over one
// protocol (Start, Turn, Interrupt, Stop, Alive, Diagnostics), what an
// adapter is given (Launch: the command, the episode's directories, the
// MCP injection of the tool bridge, ModelAccess to the model gateway) and
// returns (TurnInput and TurnResult, events through the session's sink),
// Failure (how an adapter classifies what ended an episode: a
// wire.Failure* type and a message), the optional Deliverer (input during
// a turn), the optional Forker (a harness's state handed to a forked
// sibling: ForkState, Launch.Fork, the ForkResume/ForkLine/ForkReplay
// mechanisms, ErrForkUnsupported), Config (the harness section of an
// environment's configuration), and the Registry a program fills with the
// adapters it links (no adapter registers itself).
//
// The adapters live in subpackages of harness/adapter (jsonl, pty, acp,
// streamjson, oneshot, on the base of adapterkit), the agent presets in
// harness/agents. Sessions, turns and observations are package session's;
// what an episode opens (directories, sandbox, doors, bridge, gateway) is
// package episode's.
//
// The package must not know about sessions, sandboxes, HTTP or any
// particular harness protocol: adapters import it, never the reverse
// (TestAdaptersLinkOnlyTheContract).
package harness
