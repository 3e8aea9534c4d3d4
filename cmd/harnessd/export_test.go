package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// harnessd export refuses what it cannot convert, with a usage error for
// the flags and a failure for the files; a minimal record converts.
func TestExportArguments(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "ep.jsonl")
	os.WriteFile(record, []byte(`{"kind":"reset","time":1,"episode_id":"ep","config":"c"}`+"\n"+
		`{"kind":"message","time":2,"turn":1,"content":"hi"}`+"\n"), 0o644)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{not json\n"), 0o644)
	wrongExport := filepath.Join(dir, "wrong.export.json")
	os.WriteFile(wrongExport, []byte(`{"format":"something else"}`), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", record}, exitUsage, "--format is required"},
		{[]string{"export", "--format", "otel", record}, exitUsage, `unknown --format "otel"`},
		{[]string{"export", "--format", "atif"}, exitUsage, "one record file"},
		{[]string{"export", "--format", "atif", filepath.Join(dir, "none.jsonl")}, exitFailure, "no such file"},
		{[]string{"export", "--format", "atif", bad}, exitFailure, "record 1"},
		{[]string{"export", "--format", "atif", "--export", wrongExport, record}, exitFailure, "not the gateway's training export"},
	} {
		_, errOut, code := harnessd(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, errOut)
		}
	}
	out, errOut, code := harnessd(t, nil, "export", "--format", "atif", record)
	var v struct {
		SchemaVersion string `json:"schema_version"`
		Steps         []struct {
			Source  string `json:"source"`
			Message string `json:"message"`
		} `json:"steps"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.SchemaVersion != "ATIF-v1.7" ||
		len(v.Steps) != 1 || v.Steps[0].Source != "user" || v.Steps[0].Message != "hi" {
		t.Errorf("exit %d: %s\n%s", code, out, errOut)
	}
}

// A record holding two episodes (an id reused) needs --attempt.
func TestExportPicksAnAttempt(t *testing.T) {
	record := filepath.Join(t.TempDir(), "ep.jsonl")
	os.WriteFile(record, []byte(`{"kind":"reset","time":1,"episode_id":"ep"}`+"\n"+`{"kind":"message","time":2,"turn":1,"content":"first"}`+"\n"+
		`{"kind":"reset","time":3,"episode_id":"ep"}`+"\n"+`{"kind":"message","time":4,"turn":1,"content":"second"}`+"\n"), 0o644)
	if _, errOut, code := harnessd(t, nil, "export", "--format", "atif", record); code != exitFailure || !strings.Contains(errOut, "holds 2 episodes") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, _, code := harnessd(t, nil, "export", "--format", "atif", "--attempt", "3", record); code != exitFailure {
		t.Errorf("--attempt 3 of 2: exit %d", code)
	}
	out, errOut, code := harnessd(t, nil, "export", "--format", "atif", "--attempt", "2", record)
	if code != exitOK || !strings.Contains(out, `"message": "second"`) || strings.Contains(out, "first") {
		t.Errorf("exit %d: %s\n%s", code, out, errOut)
	}
}
