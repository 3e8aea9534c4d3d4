package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/harnessd/harnessd/internal/units"
)

// zeroKey is a key whose 0 means its default def; size: its value is a
// size, else a duration.
type zeroKey struct {
	key, def string
	size     bool
}

// zeroIsDefault are the keys whose 0 is taken for their default, where a
// reader of episode_timeout (0: none) or max_turns (0: unlimited) would
// expect "no limit": a turn, a start and a turn's output always have one.
var zeroIsDefault = []zeroKey{
	{"episode.turn_timeout", fmt.Sprintf("%gs", DefaultTurnTimeout.Seconds()), false},
	{"harness.startup_timeout", fmt.Sprintf("%gs", DefaultStartupTimeout.Seconds()), false},
	{"episode.output_limit", units.ByteSize(DefaultOutputLimit).String(), true},
}

// explicitZeros reports each key of zeroIsDefault that data sets to 0:
// turn_timeout: 0 was taken silently for 600 s where its writer meant no
// limit. Values that do not parse are left to the decoder's messages.
func explicitZeros(data []byte) []error {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	byLine := map[int][]keyedValue{}
	collectValues(&doc, "", byLine)
	lines := make([]int, 0, len(byLine))
	for l := range byLine {
		lines = append(lines, l)
	}
	slices.Sort(lines)
	var out []error
	for _, l := range lines {
		for _, v := range byLine[l] {
			i := slices.IndexFunc(zeroIsDefault, func(z zeroKey) bool { return z.key == v.path })
			if i < 0 || v.node.Kind != yaml.ScalarNode || !isZero(v.node.Value, zeroIsDefault[i].size) {
				continue
			}
			out = append(out, fmt.Errorf("line %d: %s: 0 is not \"no limit\" here, there is always one: omit the key for the default (%s), or give another",
				l, v.path, zeroIsDefault[i].def))
		}
	}
	return out
}

// isZero says whether s parses to 0 as a size or a duration.
func isZero(s string, size bool) bool {
	if size {
		b, err := units.ParseByteSize(s)
		return err == nil && b == 0
	}
	d, err := units.ParseDuration(strings.TrimSpace(s))
	return err == nil && d == 0
}
