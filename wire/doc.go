// Package wire is harnessd's wire schema: the events a turn produces
// (Event and one typed payload per event type), the observations, state and
// actions of OpenEnv's protocol, the failure types of terminal
// observations, and the records of an episode's record file. The JSON tags of these types are the schema; docs/protocol.md
// documents them field by field and a test keeps the two in step.
//
// Every producer of events (adapters, the tool bridge, the model gateway, the
// session) builds them through these types, and every consumer (the server,
// client, printers) reads them through these types.
//
// The gateway's calls travel as deltas from the call before; CallTokenIDs
// and CallMessages rebuild them whole, RequestDeltas makes the requests'.
//
// The package imports only the standard library. It must not know about
// processes, MCP, HTTP or any harness protocol: it is the leaf that client
// code and every producer share.
package wire
