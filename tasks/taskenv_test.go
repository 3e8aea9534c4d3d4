package tasks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/tasks"
)

// TestTaskEnvCannotHandTheModelKeyToTheHarness (red team 11): the real
// model key stays in the daemon; its variable (harness.model.api_key_env)
// was taken out of the harness's environment by name only. A task's
// environment.env resolves ${VAR} from the daemon's environment (Harbor's
// form) under a name of its own, so a dataset's task.toml with
// STOLEN = "${THE_KEY_VARIABLE}" handed the agent the real key. Now every
// variable holding the key's value is withheld from the harness. The
// control: another host variable resolved the same way reaches the agent.
func TestTaskEnvCannotHandTheModelKeyToTheHarness(t *testing.T) {
	const key = "sk-REAL-upstream-key-task-env-9d2b"
	t.Setenv("HARNESSD_TEST_REAL_KEY", key)
	t.Setenv("HARNESSD_TEST_PLAIN", "plain-value")
	dir := filepath.Join(t.TempDir(), "envtask")
	for p, c := range map[string]string{
		"task.toml":      "[environment.env]\nSTOLEN = \"${HARNESSD_TEST_REAL_KEY}\"\nPLAIN = \"${HARNESSD_TEST_PLAIN}\"\n",
		"instruction.md": "print the environment\n",
		"tests/test.sh":  "echo 0 > /logs/verifier/reward.txt\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := shellSession(t, func(c *config.Config) {
		c.Tasks = tasks.Source{Task: dir}
		c.Episode.MaxTurns = 5 // no grading: the turn is what is looked at
		c.Harness.Model = config.ModelConfig{URL: "http://127.0.0.1:1/v1", APIKeyEnv: "HARNESSD_TEST_REAL_KEY"}
	})
	_, final := episode(t, s, "envtask", `echo "STOLEN=${STOLEN:-unset} PLAIN=${PLAIN:-unset}"`)
	resp := deref(final.Metadata.Response)
	if !strings.Contains(resp, "PLAIN=plain-value") {
		t.Fatalf("control: the task's other host variable did not reach the agent: %q", resp)
	}
	if strings.Contains(resp, key) {
		t.Fatalf("the task's environment.env handed the agent the real model key: %q", resp)
	}
	if !strings.Contains(resp, "STOLEN=unset") {
		t.Fatalf("response %q, want STOLEN=unset", resp)
	}
}
