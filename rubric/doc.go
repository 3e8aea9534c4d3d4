// Package rubric computes rewards after a turn, in the daemon, where the
// harness cannot see or influence them. A Set holds configured rubrics of
// three kinds — command (a scorer program run over the episode's workspace,
// only ever in the sandbox Input.Sandbox starts: never on the host),
// match (a regular expression or substring on the turn's response) and tool
// (a call to a hidden MCP tool) — each scoring after every turn or only at
// the end of the episode; the reward is their weighted sum, with one Result
// per rubric for the observation's reward details.
//
// The package knows nothing of harness protocols, sessions or MCP: tools are
// reached through a ToolFunc, processes through the process package.
package rubric
