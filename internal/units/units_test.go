package units

import (
	"encoding/json"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "1.5": 1500 * time.Millisecond, "2m": 2 * time.Minute, "0": 0} {
		var d Duration
		if err := yaml.Unmarshal([]byte(in), &d); err != nil || d.D() != want {
			t.Errorf("yaml %q -> %v, %v; want %v", in, d, err, want)
		}
		if err := json.Unmarshal([]byte(`"`+in+`"`), &d); err != nil || d.D() != want {
			t.Errorf("json %q -> %v, %v; want %v", in, d, err, want)
		}
	}
	var d Duration
	for _, bad := range []string{"-1s", "soon", "[1]"} {
		if err := yaml.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("yaml %q accepted", bad)
		}
	}
	if b, _ := json.Marshal(Duration(90 * time.Second)); string(b) != `"1m30s"` {
		t.Errorf("marshal = %s", b)
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"16MiB": 16 << 20, "512K": 512 << 10, "1G": 1 << 30, "100": 100, "1.5KiB": 1536} {
		var b ByteSize
		if err := yaml.Unmarshal([]byte(in), &b); err != nil || b != want {
			t.Errorf("%q -> %v, %v; want %v", in, b, err, want)
		}
	}
	var b ByteSize
	if err := yaml.Unmarshal([]byte("lots"), &b); err == nil {
		t.Error("accepted 'lots'")
	}
	if ByteSize(16<<20).String() != "16MiB" {
		t.Error(ByteSize(16 << 20).String())
	}
}
