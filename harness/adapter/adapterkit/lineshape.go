package adapterkit

import (
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// MaxLineContainers bounds the JSON objects and arrays of one line a
// harness writes. Decoding makes a Go value of each, a struct, a map or a
// slice, whatever its size on the line: a stream-json line of 4 MiB of
// empty content blocks ({},) allocated 1,122 MiB. An agent's ordinary line
// has a few dozen; a tool's structured input a few thousand.
const MaxLineContainers = 1 << 16

// CheckLineShape returns the output_limit failure for a line of more than
// MaxLineContainers JSON objects and arrays (wire.Containers), or nil. It
// scans the line once, at gigabytes a second.
func CheckLineShape(text []byte) error {
	if n := wire.Containers(text); n > MaxLineContainers {
		return harness.Fail(wire.FailureOutputLimit,
			"harness wrote a line of %d JSON objects and arrays (limit %d: each costs the daemon a value however small it is on the line)",
			n, MaxLineContainers)
	}
	return nil
}
