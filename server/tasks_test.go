package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/tasks"
)

// taskServer serves the tasks package's test taskset with the test agent
// (no grading: no episode of these tests ends).
func taskServer(t *testing.T) *testServer {
	t.Helper()
	bin := testbin.Path(t, "testharness")
	return start(t, Options{MaxSessions: 4, Config: &config.Config{
		Name:      "tasks-env",
		Harness:   config.HarnessConfig{Config: harness.Config{Command: []string{bin, "agent"}, StopGrace: units.Duration(200 * time.Millisecond)}},
		Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		Tasks:     tasks.Source{Dir: "../tasks/testdata/harbor", JSONL: "../tasks/testdata/tasks.jsonl"},
	}})
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("GET %s: %s: %v", url, b, err)
	}
	return resp.StatusCode, m
}

func TestResetKwargsPickTheTask(t *testing.T) {
	ts := taskServer(t)
	c := ts.ws(t, "/ws", nil)
	cases := []struct {
		data, want string
	}{
		{`{"task_id":"inline-echo"}`, "inline-echo"},
		{`{"task_index":1}`, "hello"},
		{`{"seed":6}`, "inline-add"}, // 6 mod 4
		{`{"seed":4,"episode_id":"e1"}`, "count"},
		{`{"task_id":"hello","seed":3}`, "hello"},
	}
	for _, tc := range cases {
		f := roundTrip(t, c, `{"type":"reset","data":`+tc.data+`}`)
		data, _ := f["data"].(map[string]any)
		obs, _ := data["observation"].(map[string]any)
		md, _ := obs["metadata"].(map[string]any)
		if md["task_id"] != tc.want {
			t.Errorf("reset %s: task_id %v, want %s (%v)", tc.data, md["task_id"], tc.want, f)
			continue
		}
		if instr, _ := md["task_instruction"].(string); instr == "" {
			t.Errorf("reset %s: no task_instruction", tc.data)
		}
	}
	for _, bad := range []string{`{"task_id":"nope"}`, `{"task_index":9}`, `{"task_index":-1}`, `{"task_index":"x"}`, `{"task_id":"hello","task_index":1}`} {
		f := roundTrip(t, c, `{"type":"reset","data":`+bad+`}`)
		if f["type"] != "error" || f["data"].(map[string]any)["code"] != codeValidation {
			t.Errorf("reset %s: %v, want a VALIDATION_ERROR", bad, f)
		}
	}
	resp, err := http.Post(ts.url+"/reset", "application/json", strings.NewReader(`{"task_id":"count"}`))
	if err != nil {
		t.Fatal(err)
	}
	var obs map[string]any
	json.NewDecoder(resp.Body).Decode(&obs)
	resp.Body.Close()
	if md := obs["observation"].(map[string]any)["metadata"].(map[string]any); md["task_id"] != "count" || md["task_metadata"].(map[string]any)["difficulty"] != "easy" {
		t.Errorf("POST /reset task_id count: %v", obs)
	}
	resp, _ = http.Post(ts.url+"/reset", "application/json", strings.NewReader(`{"task_id":"nope"}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("POST /reset unknown task: %d, want 422", resp.StatusCode)
	}
}

// OpenEnv's client shows an error frame's message and code only, so a
// refused task choice says why in the message too.
func TestTaskChoiceErrorMessageSaysWhy(t *testing.T) {
	ts := taskServer(t)
	c := ts.ws(t, "/ws", nil)
	f := roundTrip(t, c, `{"type":"reset","data":{"task_id":"nope"}}`)
	data, _ := f["data"].(map[string]any)
	msg, _ := data["message"].(string)
	if data["code"] != codeValidation || !strings.HasPrefix(msg, "Invalid message: no such task") || !strings.Contains(msg, "GET /tasks lists them") {
		t.Errorf("reset task_id nope: %v", f)
	}
	f = roundTrip(t, c, `{"type":"reset","data":{"task_index":9}}`)
	if msg, _ := f["data"].(map[string]any)["message"].(string); !strings.Contains(msg, "task_index 9 is out of range") {
		t.Errorf("reset task_index 9: %v", f)
	}
}

func TestTasksListIsPaginated(t *testing.T) {
	ts := taskServer(t)
	code, m := getJSON(t, ts.url+"/tasks?offset=1&limit=2")
	if code != 200 || m["total"] != 4.0 {
		t.Fatalf("/tasks: %d %v", code, m)
	}
	list := m["tasks"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["id"] != "hello" || list[1].(map[string]any)["index"] != 2.0 {
		t.Errorf("/tasks page: %v", list)
	}
	if _, m := getJSON(t, ts.url+"/tasks?offset=10"); len(m["tasks"].([]any)) != 0 {
		t.Errorf("past the end: %v", m)
	}
	for _, q := range []string{"offset=-1", "limit=0", "limit=5000", "offset=x"} {
		if code, _ := getJSON(t, ts.url+"/tasks?"+q); code != http.StatusUnprocessableEntity {
			t.Errorf("/tasks?%s: %d, want 422", q, code)
		}
	}
	_, md := getJSON(t, ts.url+"/metadata")
	if tm, _ := md["tasks"].(map[string]any); tm["count"] != 4.0 {
		t.Errorf("/metadata tasks: %v", md["tasks"])
	}
	_, doc := getJSON(t, ts.url+"/openapi.json")
	paths := doc["paths"].(map[string]any)
	if _, ok := paths["/tasks"]; !ok {
		t.Error("/openapi.json has no /tasks")
	}
	props := paths["/reset"].(map[string]any)["post"].(map[string]any)["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)
	if _, ok := props["task_id"]; !ok {
		t.Error("/openapi.json's reset body has no task_id")
	}
}

func TestTaskChoiceWithoutTasksetIsRefused(t *testing.T) {
	ts := start(t, Options{})
	c := ts.ws(t, "/ws", nil)
	f := roundTrip(t, c, `{"type":"reset","data":{"task_id":"x"}}`)
	if f["type"] != "error" || !strings.Contains(f["data"].(map[string]any)["errors"].([]any)[0].(map[string]any)["msg"].(string), "no taskset") {
		t.Errorf("task_id without a taskset: %v", f)
	}
	if _, m := getJSON(t, ts.url+"/tasks"); m["total"] != 0.0 {
		t.Errorf("/tasks without a taskset: %v", m)
	}
}
