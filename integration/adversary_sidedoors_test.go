package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The red team's command-rubric escape against the real daemon (issue 22):
// a `type: command` rubric runs a script the agent wrote in its workspace
// (the red team's was pytest collecting a conftest.py). Before, it ran as
// host root in the daemon's namespaces, read /etc/shadow and scored 1. Now
// the rubric has a sandbox of its own in either isolation: a non-root uid,
// the workspace read-only, no network.
func TestAdversaryCommandRubricEscape(t *testing.T) {
	needSandbox(t)
	script := `id -u; touch rubric-was-here 2>/dev/null && echo wrote-workspace; cat /etc/shadow >/dev/null 2>&1 && echo 1 || echo 0`
	// Positive control: the script as the host supervisor used to run it.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "check.sh"), []byte(script), 0o644)
	cmd := exec.Command("sh", "check.sh")
	cmd.Dir = dir
	if out, err := cmd.Output(); err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "1") || !strings.HasPrefix(string(out), "0\n") {
		t.Fatalf("control: on the host the script says %q (%v), want uid 0 and score 1", out, err)
	}
	rubrics := "rubrics:\n" +
		"  - {name: agent-script, type: command, command: [sh, check.sh]}\n" +
		"  - {name: answer, type: command, command: [sh, -c, '[ \"$(cat answer.txt)\" = 42 ] && echo 1 || echo 0']}\n"
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			d := advDaemon(t, iso, rubrics)
			s := openSession(t, d, iso)
			obs := s.step("write check.sh " + script + ";;write answer.txt 42;;say done")
			md := meta(t, obs)
			details, _ := md["reward_details"].([]any)
			got := map[string]map[string]any{}
			for _, x := range details {
				if m, ok := x.(map[string]any); ok {
					got[m["name"].(string)] = m
				}
			}
			a, ans := got["agent-script"], got["answer"]
			if a == nil || a["score"] != 0.0 || strings.Contains(a["detail"].(string), "wrote-workspace") || strings.HasPrefix(a["detail"].(string), "0\n") {
				t.Errorf("agent-written rubric code: %v, want score 0 under a non-root uid with the workspace read-only", a)
			}
			if ans == nil || ans["score"] != 1.0 {
				t.Errorf("honest rubric: %v, want 1", ans)
			}
			if obs["reward"] != 1.0 {
				t.Errorf("reward %v, want 1 (the honest rubric alone)", obs["reward"])
			}
		})
	}
}
