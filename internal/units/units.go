// Package units holds the small value types of harnessd's configuration:
// durations and byte sizes that decode from YAML and JSON as "30s" / "16MiB"
// (or bare numbers of seconds / bytes) and encode back readably.
package units

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as "1.5s", "10m" or a bare number of seconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// ParseDuration parses "1.5s"-style durations and bare seconds.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("negative duration %q", s)
		}
		return Duration(f * float64(time.Second)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 30s, 2m, or seconds)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return Duration(v), nil
}

// UnmarshalYAML accepts a string or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return lineError(n, "duration must be a scalar")
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return lineError(n, err.Error())
	}
	*d = v
	return nil
}

// lineError is a bad value at node n as a *yaml.TypeError, which the
// decoder collects and goes on (any other error stops it), so that one bad
// value does not hide the problems after it.
func lineError(n *yaml.Node, msg string) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, msg)}}
}

// UnmarshalJSON accepts a string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		s = string(b)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// MarshalYAML writes the duration as a string such as "30s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// ByteSize is a size in bytes written as "16MiB", "512K", "1G" or a bare number.
type ByteSize int64

var sizeSuffixes = []struct {
	s string
	m int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseByteSize parses sizes with binary suffixes.
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	given := s
	mult := int64(1)
	for _, suf := range sizeSuffixes {
		if strings.HasSuffix(s, suf.s) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, suf.s)), suf.m
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 16MiB, 512K, or bytes)", given)
	}
	return ByteSize(f * float64(mult)), nil
}

func (b ByteSize) String() string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return strconv.FormatInt(int64(b), 10)
}

// UnmarshalYAML accepts a string or a number of bytes.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return lineError(n, "size must be a scalar")
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return lineError(n, err.Error())
	}
	*b = v
	return nil
}

// UnmarshalJSON accepts a string or a number of bytes.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		s = string(data)
	}
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalJSON writes the size as a string such as "16MiB".
func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// MarshalYAML writes the size as a string such as "16MiB".
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }
