package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

// JSON logs give every duration in seconds, as a number, under its key.
func TestJSONLogDurationsInSeconds(t *testing.T) {
	var buf bytes.Buffer
	lf := logFlags{level: "info", format: "json"}
	log, err := lf.logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer slog.SetDefault(slog.New(slog.DiscardHandler))
	log.Info("drain", "drain_timeout", 20*time.Second, slog.Group("turn", "elapsed", 1500*time.Millisecond), "count", 3)
	var rec struct {
		DrainTimeout any `json:"drain_timeout"`
		Turn         struct {
			Elapsed any `json:"elapsed"`
		} `json:"turn"`
		Count any `json:"count"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	if rec.DrainTimeout != 20.0 || rec.Turn.Elapsed != 1.5 || rec.Count != 3.0 {
		t.Errorf("record %s: drain_timeout %v, turn.elapsed %v, count %v", buf.Bytes(), rec.DrainTimeout, rec.Turn.Elapsed, rec.Count)
	}
}
