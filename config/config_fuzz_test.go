package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParseConfig decodes a configuration file: an error, or a normalized
// configuration with a harness command that encodes, and that a second
// Normalize leaves as it is.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"harness:\n  command: [my-agent, --flag]\n",
		"name: calc\nharness:\n  command: [agent]\n  env: {A: \"1\"}\n  startup_timeout: 2.5\n  options: {permission: deny}\n" +
			"tools:\n  - name: db\n    command: [python3, tools.py]\n    call_timeout: 5s\n  - name: remote\n    url: http://127.0.0.1:9/mcp\n    headers: {X-Key: k}\n" +
			"hide: [\"grade*\"]\nrubrics:\n  - {name: r, type: match, contains: ok, on: done, weight: 2}\n" +
			"episode: {turn_timeout: 90s, max_turns: 3, end_on_done: false, output_limit: 1MiB}\nrecord_dir: records\n",
		"harness:\n  command: [a]\n  comand: [b]\n",
		"harness: {command: [a]}\ntools:\n  - {name: t, url: ftp://x}\n",
		"harness: {command: [a]}\nepisode: {max_turns: -1}\n",
		"a: &a [*a]\n",
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("..", "demo", "env.yaml")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseConfig(b, "/base")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if len(cfg.Harness.Command) == 0 {
			t.Fatalf("accepted a configuration without a harness command: %q", b)
		}
		first, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("an accepted configuration does not encode: %v", err)
		}
		if err := cfg.Normalize(); err != nil {
			t.Fatalf("a normalized configuration fails Normalize: %v", err)
		}
		second, _ := json.Marshal(cfg)
		var a, c any
		json.Unmarshal(first, &a)
		json.Unmarshal(second, &c)
		if !reflect.DeepEqual(a, c) {
			t.Fatalf("Normalize is not idempotent:\n %s\n %s", first, second)
		}
	})
}
