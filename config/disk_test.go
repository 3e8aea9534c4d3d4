package config

import (
	"strings"
	"testing"
)

func TestLimitsDisk(t *testing.T) {
	cases := []struct {
		yaml     string
		bytes    int64
		explicit bool
	}{
		{"harness: {command: [a]}\n", DefaultDisk, false},
		{"harness: {command: [a]}\nlimits: {disk: 0}\n", 0, true},
		{"harness: {command: [a]}\nlimits: {disk: 8MiB}\n", 8 << 20, true},
		// Disk is no cgroup limit: process isolation takes it.
		{"harness: {command: [a]}\nisolation: process\nlimits: {disk: 2GiB}\n", 2 << 30, true},
	}
	for _, c := range cases {
		cfg, err := ParseConfig([]byte(c.yaml), "")
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if b, ex := cfg.Limits.DiskQuota(); b != c.bytes || ex != c.explicit {
			t.Errorf("%q: DiskQuota() = %d, %v; want %d, %v", c.yaml, b, ex, c.bytes, c.explicit)
		}
	}
	for y, want := range map[string]string{
		"harness: {command: [a]}\nlimits: {disk: 4KiB}\n": "limits.disk 4096 bytes is too small",
		"harness: {command: [a]}\nlimits: {disk: -1}\n":   "invalid size",
	} {
		if _, err := ParseConfig([]byte(y), ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: err %v, want %q", y, err, want)
		}
	}
}
