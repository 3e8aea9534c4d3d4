package config

import (
	"strings"
	"testing"
)

func TestCheckpointKeys(t *testing.T) {
	cfg, err := ParseConfig([]byte("harness: {command: [a]}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Episode
	if e.Checkpoints != CheckpointsOff || e.CheckpointsEnabled() || e.MaxCheckpoints != 16 || e.MaxCheckpointBytes != 1<<30 {
		t.Errorf("defaults: %q %d %d", e.Checkpoints, e.MaxCheckpoints, e.MaxCheckpointBytes)
	}
	cfg, err = ParseConfig([]byte("harness: {command: [a]}\nepisode: {checkpoints: every_turn, max_checkpoints: 4, max_checkpoint_bytes: 256MiB}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	e = cfg.Episode
	if !e.CheckpointsEnabled() || e.MaxCheckpoints != 4 || e.MaxCheckpointBytes != 256<<20 {
		t.Errorf("set: %q %d %d", e.Checkpoints, e.MaxCheckpoints, e.MaxCheckpointBytes)
	}
	for y, want := range map[string]string{
		"episode: {checkpoints: always}":        `episode.checkpoints "always": want every_turn or off`,
		"episode: {checkpoints: true}":          `episode.checkpoints "true"`,
		"episode: {max_checkpoints: -1}":        "episode.max_checkpoints -1 must not be negative",
		"episode: {max_checkpoint_bytes: lots}": "invalid size",
	} {
		_, err := ParseConfig([]byte("harness: {command: [a]}\n"+y+"\n"), "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", y, err, want)
		}
	}
	// A negative size in code (the YAML decoder refuses one already).
	c := &Config{}
	c.Harness.Command = []string{"a"}
	c.Episode.MaxCheckpointBytes = -1
	if err := c.Normalize(); err == nil || !strings.Contains(err.Error(), "episode.max_checkpoint_bytes -1 must not be negative") {
		t.Errorf("negative max_checkpoint_bytes: %v", err)
	}
}
