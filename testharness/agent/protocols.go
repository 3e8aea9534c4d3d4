package agent

import (
	"io"
	"sort"
)

// Frontend runs the agent over one wire protocol until its input ends and
// returns the process exit code.
type Frontend func(opts Options, stdin io.Reader, stdout io.WriteCloser, stderr io.Writer) int

// Protocols maps --protocol names to front ends. Each front end registers
// itself from its own file.
var Protocols = map[string]Frontend{
	"jsonl": RunJSONL,
}

// ProtocolNames lists the registered protocols.
func ProtocolNames() []string {
	names := make([]string, 0, len(Protocols))
	for n := range Protocols {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
