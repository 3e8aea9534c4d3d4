// Package mcptools is the MCP tool server of harnessd's test double: a small
// set of deterministic tools (arithmetic, echo, a slow tool that honours
// cancellation, a crashing tool, a tool with a rich JSON schema, a grader and
// per-process counters) served over stdio by `testharness tools`.
//
// The bridge tests start it as a real upstream process; the tools are also
// usable in-process through NewServer.
package mcptools
