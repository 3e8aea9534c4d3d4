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

// TurnValueBytes is the turn's output limit (TurnInput.OutputLimit,
// episode.output_limit) a JSON value of its lines takes: a turn's lines may
// hold at most OutputLimit/TurnValueBytes JSON objects, arrays and array
// elements in all (1,048,576 at the default 16 MiB). MaxLineValues bounds
// one line's, not how many such lines a turn prints: 16 MiB of lines of
// 65,000 empty content blocks each made a stream-json turn allocate about
// 4 GiB. An agent's output has far more bytes than values (text,
// identifiers, keys); dense JSON such as [0,0,...] has 2 bytes a value.
const TurnValueBytes = 16

// TurnValues counts the JSON values of one turn's lines against the turn's
// bound (TurnValueBytes). The zero value bounds each line alone.
type TurnValues struct {
	n, limit int64
}

// NewTurnValues returns the count of a turn whose output limit is
// outputLimit (TurnInput.OutputLimit): none when it is not positive.
func NewTurnValues(outputLimit int64) *TurnValues {
	return &TurnValues{limit: max(0, outputLimit/TurnValueBytes)}
}

// Check returns the output_limit failure for a line of more than
// MaxLineValues JSON objects, arrays and array elements (wire.DecodedValues)
// or one that takes the turn's over its bound, or nil, counting the line's.
// It scans the line once, at gigabytes a second. A nil TurnValues bounds
// the line alone.
func (t *TurnValues) Check(text []byte) error {
	n := wire.DecodedValues(text)
	if n > MaxLineValues {
		return harness.Fail(wire.FailureOutputLimit,
			"harness wrote a line of %d JSON objects, arrays and array elements (limit %d: each costs the daemon a value however small it is on the line)",
			n, MaxLineValues)
	}
	if t == nil || t.limit == 0 {
		return nil
	}
	t.n += int64(n)
	if t.n > t.limit {
		return harness.Fail(wire.FailureOutputLimit,
			"harness wrote more than %d JSON objects, arrays and array elements in one turn (limit: one per %d bytes of episode.output_limit; each costs the daemon a value however small it is on the line)",
			t.limit, TurnValueBytes)
	}
	return nil
}
