package adapterkit

import (
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/wire"
)

// MaxLineValues bounds the JSON objects, arrays and array elements of
// one line a harness writes (wire.DecodedValues). Decoding makes a Go value of
// each, a struct, a map, a slice or an element of a slice, whatever its
// size on the line: a stream-json line of 4 MiB of empty content blocks
// ({},) allocated 1,122 MiB, one of 2 MiB of zeros (0,) 982 MiB. An
// agent's ordinary line has a few dozen; a tool's structured input a few
// thousand.
const MaxLineValues = 1 << 16

// CheckLineShape returns the output_limit failure for a line of more than
// MaxLineValues JSON objects, arrays and array elements
// (wire.DecodedValues), or nil. It
// scans the line once, at gigabytes a second.
func CheckLineShape(text []byte) error {
	if n := wire.DecodedValues(text); n > MaxLineValues {
		return harness.Fail(wire.FailureOutputLimit,
			"harness wrote a line of %d JSON objects, arrays and array elements (limit %d: each costs the daemon a value however small it is on the line)",
			n, MaxLineValues)
	}
	return nil
}
