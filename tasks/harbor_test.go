package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"

	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// writeTask writes a Harbor task directory from files (testbin.WriteFiles) and
// loads it.
func writeTask(t *testing.T, files map[string]string) (*tasks.Task, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "task")
	testbin.WriteFiles(t, dir, files)
	set, err := tasks.Load(tasks.Source{Task: dir})
	if err != nil {
		return nil, err
	}
	return set.Tasks()[0], nil
}

func mustTask(t *testing.T, files map[string]string) *tasks.Task {
	t.Helper()
	task, err := writeTask(t, files)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// oracle runs the task's oracle trial in a fresh workspace.
func oracle(t *testing.T, task *tasks.Task, o tasks.RunOptions) *tasks.Trial {
	t.Helper()
	root := scratchDir(t)
	o.Workspace, o.Scratch = filepath.Join(root, "ws"), filepath.Join(root, "runs")
	if err := os.Mkdir(o.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr, err := task.Oracle(ctx, o)
	if err != nil {
		t.Fatalf("oracle %s: %v", task.ID, err)
	}
	return tr
}

const rewardIf = `if %s; then echo 1 > /logs/verifier/reward.txt; else echo "FAIL: %s"; echo 0 > /logs/verifier/reward.txt; fi
`

func test(cond string) string { return fmt.Sprintf(rewardIf, cond, strings.ReplaceAll(cond, `"`, `'`)) }

// Harbor's example tasks (equivalents: testdata/harbor-examples/README.md)
// grade 1 with the oracle where they can run offline; hello-world's tests
// install uv and cannot: grader_needs_network, no reward.
func TestHarborExamplesOracle(t *testing.T) {
	needSandbox(t)
	set, err := tasks.Load(tasks.Source{Dir: "testdata/harbor-examples"})
	if err != nil {
		t.Fatal(err)
	}
	if n := set.Len(); n != 5 {
		t.Fatalf("%d example tasks, want 5", n)
	}
	for _, task := range set.Tasks() {
		tr := oracle(t, task, tasks.RunOptions{})
		if task.ID == "hello-world" {
			if tr.Reward != nil || tr.ErrorType != tasks.FailureGraderNeedsNetwork || !strings.Contains(tr.Error, "apt-get update") {
				t.Errorf("hello-world: reward %v, error_type %q, error %q; want no reward, grader_needs_network naming apt-get", tr.Reward, tr.ErrorType, tr.Error)
			}
			continue
		}
		if tr.Reward == nil || *tr.Reward != 1 || tr.ErrorType != "" {
			t.Errorf("%s: %+v (grade %+v), want reward 1", task.ID, tr, tr.Grade)
		}
	}
	if tasks.FailureGraderNeedsNetwork != string(wire.FailureGraderNeedsNetwork) {
		t.Errorf("tasks.FailureGraderNeedsNetwork %q != wire's %q", tasks.FailureGraderNeedsNetwork, wire.FailureGraderNeedsNetwork)
	}
}

// Every Harbor key harnessd cannot honour is refused with the key named;
// none is dropped without a word.
func TestUnsupportedKeysAreRefusedByName(t *testing.T) {
	base := map[string]string{"instruction.md": "x\n", "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n"}
	for _, c := range []struct{ toml, extra, want string }{
		{"[environment]\nos = \"windows\"\n", "", "environment.os is not supported"},
		{"[environment.healthcheck]\ncommand = \"true\"\n", "", "environment.healthcheck is not supported"},
		{"[environment]\nskills_dir = \"/skills\"\n", "", "environment.skills_dir is not supported"},
		{"[environment.tpu]\ntype = \"v6e\"\n", "", "environment.tpu is not supported"},
		{"[[verifier.collect]]\ncommand = \"true\"\n", "", "verifier.collect is not supported"},
		{"[verifier.environment]\ndocker_image = \"x\"\n", "", "verifier.environment.docker_image is not supported"},
		{"[verifier]\nenvironment_mode = \"shared\"\n[verifier.environment]\ncpus = 1\n", "", "conflicts with [verifier.environment]"},
		{"artifacts = [\"/etc/out\"]\n[verifier]\nenvironment_mode = \"separate\"\n", "", "artifacts entry /etc/out is not supported with a separate verifier"},
		{"artifacts = [{ source = \"/x\", service = \"db\" }]\n", "", "artifacts[0].service \"db\" is not supported"},
		{"", "environment/docker-compose.yaml", "environment/docker-compose.yaml is not supported"},
		{"multi_step_reward_strategy = \"max\"\n", "", "multi_step_reward_strategy \"max\""},
		{"[environment]\nworkdir = \"app\"\n", "", "environment.workdir \"app\" is not an absolute path"},
		{"[environment]\nenv = { TOKEN = \"${HARNESSD_TEST_UNSET_VAR}\" }\n", "", "environment.env.TOKEN: the host variable HARNESSD_TEST_UNSET_VAR is not set"},
		{"[agent]\nuser = \"Bad User\"\n", "", "agent.user \"Bad User\": not a user name"},
		{"[environment]\nnetwork_mode = \"intranet\"\n", "", "environment.network_mode \"intranet\""},
		{"[[steps]]\nname = \"a\"\n[steps.healthcheck]\ncommand = \"true\"\n", "steps/a/instruction.md", "steps[\"a\"].healthcheck is not supported"},
		{"[[steps]]\nname = \"a\"\n[steps.agent]\nnetwork_mode = \"public\"\n", "steps/a/instruction.md", "steps[\"a\"].agent.network_mode is not supported"},
		{"[[steps]]\nname = \"a\"\n[steps.verifier]\nenvironment_mode = \"separate\"\n", "steps/a/instruction.md", "steps[\"a\"].verifier.environment_mode is not supported"},
		{"[[steps]]\nname = \"a\"\n[[steps]]\nname = \"b\"\n", "steps/a/instruction.md", "no steps/b/instruction.md"},
	} {
		files := map[string]string{"task.toml": c.toml}
		for k, v := range base {
			files[k] = v
		}
		if c.extra != "" {
			files[c.extra] = "x\n"
		}
		_, err := writeTask(t, files)
		var le *tasks.LoadError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("task.toml %q: error %v, want one naming %q", c.toml, err, c.want)
		}
	}
	// What is honoured or only a hint loads (hints as warnings).
	t.Setenv("HARNESSD_TEST_SET_VAR", "v")
	task := mustTask(t, map[string]string{
		"task.toml": "schema_version = \"1.3\"\nsource = \"x\"\n[task]\nname = \"o/n\"\nkeywords = [\"k\"]\nauthors = [{ name = \"A\" }]\n" +
			"[environment]\nos = \"linux\"\nworkdir = \"/harnessd-srv/app/\"\nenv = { A = \"${HARNESSD_TEST_UNSET_VAR:-dflt}\", B = \"${HARNESSD_TEST_SET_VAR}\" }\ndocker_image = \"img\"\n" +
			"[agent]\nuser = 1001\n[verifier]\nuser = \"grader\"\n",
		"instruction.md": "x\n", "tests/test.sh": "true\n",
	})
	if task.WorkDir != "/harnessd-srv/app" || task.AgentUser.UID != 1001 || task.VerifierUser.Name != "grader" || task.VerifierUser.UID != 1000 ||
		strings.Join(task.EnvironmentEnv, " ") != "A=dflt B=v" || !strings.Contains(strings.Join(task.Warnings, "\n"), "docker_image ignored") {
		t.Errorf("honoured keys: workdir %q users %+v %+v env %q warnings %q", task.WorkDir, task.AgentUser, task.VerifierUser, task.EnvironmentEnv, task.Warnings)
	}
}

// environment.workdir overrides the Dockerfile's WORKDIR; environment.env
// (templates resolved from the daemon's environment) reaches the oracle
// and the tests over the Dockerfile's ENV, [verifier] env only the tests.
func TestWorkdirAndEnvironmentEnv(t *testing.T) {
	needSandbox(t)
	t.Setenv("HARNESSD_TEST_SET_VAR", "from-host")
	task := mustTask(t, map[string]string{
		"task.toml": "[environment]\nworkdir = \"/harnessd-srv/app\"\nenv = { A = \"${HARNESSD_TEST_UNSET_VAR:-dflt}\", B = \"${HARNESSD_TEST_SET_VAR}\", C = \"env\" }\n" +
			"[verifier]\nenv = { V = \"v\" }\n[solution]\nenv = { S = \"s\" }\n",
		"instruction.md":         "x\n",
		"environment/Dockerfile": "WORKDIR /app\nENV C=image D=image\nCOPY f.txt /harnessd-srv/app/f.txt\n",
		"environment/f.txt":      "file\n",
		"solution/solve.sh":      "echo \"$PWD $A $B $C $D $S ${V:-none}\" > out.txt\n",
		"tests/test.sh":          test(`[ "$(cat /harnessd-srv/app/out.txt)" = "/harnessd-srv/app dflt from-host env image s none" ] && [ "$PWD $V ${S:-none}" = "/harnessd-srv/app v none" ] && [ -f /harnessd-srv/app/f.txt ]`),
	})
	if task.WorkDir != "/harnessd-srv/app" {
		t.Fatalf("WorkDir %q", task.WorkDir)
	}
	tr := oracle(t, task, tasks.RunOptions{})
	if tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("reward %v; stdout %q stderr %q", tr.Reward, tr.Grade.Stdout, tr.Grade.Stderr)
	}
	// A workdir below a host directory that lacks it has no mount point in
	// the read-only root: a clear error, not a run elsewhere.
	nested := mustTask(t, map[string]string{"task.toml": "[environment]\nworkdir = \"/usr/harnessd-no-such-dir\"\n", "instruction.md": "x\n",
		"solution/solve.sh": "true\n", "tests/test.sh": "true\n"})
	root := scratchDir(t)
	os.Mkdir(root+"/ws", 0o755)
	if _, err := nested.Oracle(context.Background(), tasks.RunOptions{Workspace: root + "/ws", Scratch: root + "/runs"}); err == nil ||
		!strings.Contains(err.Error(), "the workdir /usr/harnessd-no-such-dir cannot be mounted: its parent /usr is the host's") {
		t.Errorf("nested workdir: %v", err)
	}
	if !strings.Contains(strings.Join(nested.Warnings, "\n"), "cannot be mounted") {
		t.Errorf("no load-time warning: %q", nested.Warnings)
	}
}

// [agent] user runs the oracle (and setup.sh) as that user, [verifier]
// user the tests; the names resolve inside (whoami, ls -l), the workspace
// keeps the agent's files' owner into grading, and a step's users
// override the task's.
func TestUsersAreMappedOntoTheSandboxIDs(t *testing.T) {
	needSandbox(t)
	if os.Geteuid() != 0 {
		testbin.Missing(t, "task users need a range of ids: a root daemon")
	}
	task := mustTask(t, map[string]string{
		"task.toml":         "[agent]\nuser = \"agent\"\n[verifier]\nuser = \"grader\"\n",
		"instruction.md":    "x\n",
		"solution/solve.sh": "id -un > me.txt; id -u > uid.txt; echo $HOME > home.txt; touch $HOME/ok\n",
		"tests/test.sh": test(`[ "$(cat me.txt)" = agent ] && [ "$(cat uid.txt)" = 1000 ] && [ "$(cat home.txt)" = /home/agent ] && ` +
			`[ "$(stat -c %U me.txt)" = agent ] && [ "$(id -un)" = grader ] && [ "$(id -u)" = 1001 ]`),
	})
	tr := oracle(t, task, tasks.RunOptions{})
	if tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("reward %v; stdout %q stderr %q", tr.Reward, tr.Grade.Stdout, tr.Grade.Stderr)
	}
	// Steps: the first step's agent runs as root (its override), the
	// second as the task's agent; a bare uid is honoured as it is.
	task = mustTask(t, map[string]string{
		"task.toml": "[agent]\nuser = \"agent\"\n[verifier]\nuser = 4242\n" +
			"[[steps]]\nname = \"one\"\n[steps.agent]\nuser = \"root\"\n[[steps]]\nname = \"two\"\n",
		"steps/one/instruction.md":      "x\n",
		"steps/one/solution/solve.sh":   "id -un > one.txt\n",
		"steps/one/workdir/setup.sh":    "id -un > setup-one.txt\n",
		"steps/two/instruction.md":      "y\n",
		"steps/two/solution/solve.sh":   "id -un > two.txt\n",
		"steps/one/tests/test.sh":       test(`[ "$(cat one.txt)" = root ] && [ "$(cat setup-one.txt)" = root ] && [ "$(id -u)" = 4242 ]`),
		"steps/two/tests/test.sh":       test(`[ "$(cat two.txt)" = agent ]`),
		"tests/helper.txt":              "shared\n",
		"steps/two/workdir/fixture.txt": "f\n",
	})
	tr = oracle(t, task, tasks.RunOptions{})
	if tr.Reward == nil || *tr.Reward != 1 || len(tr.Steps) != 2 {
		for _, s := range tr.Steps {
			t.Logf("step %s: %+v", s.Name, s.Grade)
		}
		t.Errorf("steps with users: reward %v, %d steps", tr.Reward, len(tr.Steps))
	}
}

// Multi-step grading as Harbor's MultiStepTrial: per-step rewards, the
// trial's mean over the steps with a verifier result (missing keys 0), or
// the final step's; min_reward stops the trial (a missing key counts as
// -inf); a failed setup.sh ends it with no verifier result; the step's
// tests override the task-level tests' same-named files.
func TestMultiStepGradingAsHarbor(t *testing.T) {
	needSandbox(t)
	files := func(strategy, minReward string) map[string]string {
		return map[string]string{
			"task.toml": strategy + "[[steps]]\nname = \"a\"\n" + minReward + "[[steps]]\nname = \"b\"\n[[steps]]\nname = \"c\"\n",
			// Shared helper and a fallback test.sh at the task level.
			"tests/test.sh":             "echo '{\"reward\": 1, \"style\": 1}' > /logs/verifier/reward.json\n",
			"tests/lib.sh":              "half() { echo '{\"reward\": 0.5}' > /logs/verifier/reward.json; }\n",
			"steps/a/instruction.md":    "a\n",
			"steps/a/solution/solve.sh": "echo a >> log.txt\n",
			"steps/b/instruction.md":    "b\n",
			"steps/b/solution/solve.sh": "echo b >> log.txt\n",
			"steps/b/tests/test.sh":     ". /tests/lib.sh; half\n",
			"steps/c/instruction.md":    "c\n",
			"steps/c/solution/solve.sh": "echo c >> log.txt\n",
			"steps/c/tests/test.sh":     test(`[ "$(cat log.txt | tr -d '\n')" = abc ]`),
		}
	}
	// mean: reward (1 + 0.5 + 1)/3, style (1 + 0 + 0)/3.
	tr := oracle(t, mustTask(t, files("", "")), tasks.RunOptions{})
	if tr.Reward == nil || fmt.Sprintf("%.4f", *tr.Reward) != "0.8333" || fmt.Sprintf("%.4f", tr.Scores["style"]) != "0.3333" || len(tr.Steps) != 3 || tr.Stopped != "" {
		t.Errorf("mean: reward %v scores %v steps %d stopped %q", tr.Reward, tr.Scores, len(tr.Steps), tr.Stopped)
	}
	// final: the last step's as it is.
	tr = oracle(t, mustTask(t, files("multi_step_reward_strategy = \"final\"\n", "")), tasks.RunOptions{})
	if tr.Reward == nil || *tr.Reward != 1 || len(tr.Scores) != 1 {
		t.Errorf("final: reward %v scores %v", tr.Reward, tr.Scores)
	}
	// min_reward on a key step a lacks: -inf, stop after a.
	tr = oracle(t, mustTask(t, files("", "min_reward = { correctness = 0.5 }\n")), tasks.RunOptions{})
	if len(tr.Steps) != 1 || !strings.Contains(tr.Stopped, "correctness=-Inf below min_reward 0.5") || tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("min_reward: %d steps, stopped %q, reward %v", len(tr.Steps), tr.Stopped, tr.Reward)
	}
	// A step below its scalar min_reward stops the trial after it.
	f := files("", "")
	f["task.toml"] = "[[steps]]\nname = \"a\"\n[[steps]]\nname = \"b\"\nmin_reward = 0.9\n[[steps]]\nname = \"c\"\n"
	tr = oracle(t, mustTask(t, f), tasks.RunOptions{})
	if len(tr.Steps) != 2 || !strings.Contains(tr.Stopped, "reward=0.5 below min_reward 0.9") || tr.Reward == nil || *tr.Reward != 0.75 {
		t.Errorf("scalar min_reward: %d steps, stopped %q, reward %v", len(tr.Steps), tr.Stopped, tr.Reward)
	}
	// A failing setup.sh ends the trial: no verifier result for b, and,
	// unlike Harbor (the mean over a alone, 1), no trial reward: a setup.sh
	// runs on the workspace the agent shaped, and leaving b out would
	// raise the reward of an agent that broke it.
	f = files("", "")
	f["steps/b/workdir/setup.sh"] = "exit 3\n"
	tr = oracle(t, mustTask(t, f), tasks.RunOptions{})
	if len(tr.Steps) != 2 || tr.Steps[1].Error == "" || tr.Steps[1].Grade != nil || !strings.Contains(tr.Stopped, "step b failed") ||
		tr.Reward != nil || !strings.Contains(tr.Error, "step b produced no reward") {
		t.Errorf("failed setup: steps %+v, stopped %q, reward %v, error %q", tr.Steps, tr.Stopped, tr.Reward, tr.Error)
	}
	// The wire form lists each step.
	g := tr.WireGrade()
	if len(g.Steps) != 2 || g.Steps[0].Step != "a" || g.Steps[1].Error == "" || g.Stopped == "" {
		t.Errorf("wire grade %+v", g)
	}
}

// A separate verifier ([verifier] environment_mode = "separate") grades a
// fresh workspace holding only the declared artifacts, with its own
// environment (tests/Dockerfile ENV, [verifier.environment] env), not the
// agent's.
func TestSeparateVerifierSeesOnlyTheArtifacts(t *testing.T) {
	needSandbox(t)
	task := mustTask(t, map[string]string{
		"task.toml": "artifacts = [\"/app/out.txt\", \"/app/dir\"]\n[environment]\nenv = { AGENT_ONLY = \"1\" }\n" +
			"[verifier.environment]\nenv = { GRADER = \"g\" }\nmemory_mb = 256\n",
		"instruction.md":    "x\n",
		"solution/solve.sh": "echo out > out.txt; echo secret > private.txt; mkdir dir; echo in > dir/in.txt; ln -s /etc/hostname link\n",
		"tests/Dockerfile":  "FROM python:3\nENV FROM_IMAGE=img\nCOPY . /tests\n",
		"tests/test.sh": test(`[ "$(cat /app/out.txt)" = out ] && [ "$(cat /app/dir/in.txt)" = in ] && [ ! -e /app/private.txt ] && ` +
			`[ -z "$AGENT_ONLY" ] && [ "$GRADER $FROM_IMAGE" = "g img" ]`),
	})
	if !task.Separate {
		t.Fatal("not a separate verifier")
	}
	tr := oracle(t, task, tasks.RunOptions{})
	if tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("reward %v; stdout %q stderr %q", tr.Reward, tr.Grade.Stdout, tr.Grade.Stderr)
	}
}

// Tests that install their tools from a package host: without network they
// end as grader_needs_network naming the command (not reward 0); with the
// environment's egress proxy allowing the host — a loopback HTTP server
// standing in for it, reachable only through the proxy — the install
// works and the tests grade 1 (the positive control); a host the policy
// does not allow is refused by the proxy, again grader_needs_network.
func TestGraderNetworkInstallsThroughTheEgressProxy(t *testing.T) {
	needSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	installer := "mkdir -p \"$HOME/.local/bin\"\nprintf '#!/bin/sh\\necho tool-ok\\n' > \"$HOME/.local/bin/pkgtool\"\nchmod +x \"$HOME/.local/bin/pkgtool\"\n"
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/install.sh" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, installer)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	host := fmt.Sprintf("pkg.harnessd.test:%d", port)
	script := fmt.Sprintf("#!/bin/bash\n# The package host is not reachable directly.\ncurl -fsS --max-time 3 --noproxy '*' http://127.0.0.1:%d/install.sh >/dev/null 2>&1 && echo DIRECT\n"+
		"curl -fsSL --max-time 10 http://%s/install.sh | sh\nexport PATH=\"$HOME/.local/bin:$PATH\"\n", port, host) +
		test(`[ "$(pkgtool)" = tool-ok ]`)
	task := mustTask(t, map[string]string{"task.toml": "", "instruction.md": "x\n", "solution/solve.sh": "true\n", "tests/test.sh": script})
	if got := task.NeedsNetwork(); len(got) != 1 || !strings.Contains(got[0], "test.sh line 4: curl -fsSL") {
		t.Errorf("NeedsNetwork %q", got)
	}
	resolve := func(_ context.Context, h string) ([]netip.Addr, error) {
		if h == "pkg.harnessd.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	proxy := func(allow ...string) *egress.Options {
		return &egress.Options{Policy: egress.Policy{Allow: allow}, Deny: []netip.Prefix{}, Resolve: resolve}
	}

	offline := oracle(t, task, tasks.RunOptions{})
	if offline.Reward != nil || offline.ErrorType != tasks.FailureGraderNeedsNetwork ||
		!strings.Contains(offline.Error, "test.sh line 4: `curl -fsSL") || !strings.Contains(offline.Error, "no network") {
		t.Errorf("offline: reward %v error_type %q error %q", offline.Reward, offline.ErrorType, offline.Error)
	}
	online := oracle(t, task, tasks.RunOptions{Egress: proxy(host)})
	if online.Reward == nil || *online.Reward != 1 || online.ErrorType != "" || strings.Contains(online.Grade.Stdout, "DIRECT") {
		t.Errorf("through the proxy: reward %v error_type %q; stdout %q stderr %q", online.Reward, online.ErrorType, online.Grade.Stdout, online.Grade.Stderr)
	}
	refused := oracle(t, task, tasks.RunOptions{Egress: proxy("pypi.org")})
	if refused.Reward != nil || refused.ErrorType != tasks.FailureGraderNeedsNetwork || !strings.Contains(refused.Error, "egress proxy") {
		t.Errorf("host not allowed: reward %v error_type %q error %q", refused.Reward, refused.ErrorType, refused.Error)
	}
	// A task whose verifier may not use the network gets no proxy, however
	// the environment allows the host.
	noNet := mustTask(t, map[string]string{"task.toml": "[verifier]\nnetwork_mode = \"no-network\"\n", "instruction.md": "x\n", "solution/solve.sh": "true\n", "tests/test.sh": script})
	if tr := oracle(t, noNet, tasks.RunOptions{Egress: proxy(host)}); tr.ErrorType != tasks.FailureGraderNeedsNetwork {
		t.Errorf("no-network verifier: reward %v error_type %q", tr.Reward, tr.ErrorType)
	}
	// Tests that fail on their own, with an install command but no fetch
	// failure, keep their 0.
	plain := mustTask(t, map[string]string{"task.toml": "", "instruction.md": "x\n", "solution/solve.sh": "true\n",
		"tests/test.sh": "#!/bin/bash\nif false; then pip install x; fi\necho 0 > /logs/verifier/reward.txt\n"})
	if tr := oracle(t, plain, tasks.RunOptions{}); tr.Reward == nil || *tr.Reward != 0 || tr.ErrorType != "" {
		t.Errorf("plain failure: reward %v error_type %q", tr.Reward, tr.ErrorType)
	}
}

// Harbor's reward rules for steps, without sandboxes.
func TestTrialRewardsAndStopRules(t *testing.T) {
	task := mustTask(t, map[string]string{
		"task.toml":              "[[steps]]\nname = \"a\"\nmin_reward = 1\n[[steps]]\nname = \"b\"\nmin_reward = { x = 0.5, reward = 0 }\n",
		"steps/a/instruction.md": "a\n", "steps/b/instruction.md": "b\n", "tests/test.sh": "true\n",
	})
	if task.StepStrategy != tasks.StrategyMean || task.Instruction != "a" {
		t.Errorf("strategy %q instruction %q", task.StepStrategy, task.Instruction)
	}
	rs := []tasks.StepResult{{Name: "a", Rewards: map[string]float64{"reward": 1, "x": 1}}, {Name: "b", Failed: true}, {Name: "c", Rewards: map[string]float64{"reward": 0}}}
	if got := task.TrialRewards(rs); got != nil || !strings.Contains(tasks.NoTrialReward(rs), "step b produced no reward") {
		t.Errorf("mean with b unrewarded: %v (%s), want none, naming b (Harbor leaves b out: 1 where 0.5 is earned)", got, tasks.NoTrialReward(rs))
	}
	ok := []tasks.StepResult{rs[0], rs[2]}
	if got := task.TrialRewards(ok); got["reward"] != 0.5 || got["x"] != 0.5 {
		t.Errorf("mean %v, want reward 0.5 x 0.5 (c's missing x is 0)", got)
	}
	if stop, _ := task.StopAfter(0, rs[0]); stop {
		t.Error("a at its min_reward stops")
	}
	if stop, why := task.StopAfter(0, tasks.StepResult{Name: "a", Rewards: map[string]float64{"reward": 0.99}}); !stop || !strings.Contains(why, "reward=0.99 below min_reward 1") {
		t.Errorf("below min_reward: %v %q", stop, why)
	}
	if stop, why := task.StopAfter(1, tasks.StepResult{Name: "b", Rewards: map[string]float64{"reward": 1}}); !stop || !strings.Contains(why, "x=-Inf") {
		t.Errorf("missing key: %v %q", stop, why)
	}
	if stop, _ := task.StopAfter(1, rs[1]); !stop {
		t.Error("a failed step without a result does not stop")
	}
	if r := task.TrialRewards(nil); r != nil {
		t.Errorf("no steps: %v", r)
	}
}

// A task directory that does not exist says so, and one without task.toml
// names the directory and what a task holds: both were "no task.toml", the
// first sending the operator to look for a file in a directory that is not
// there (harnessd run --task /typo).
func TestAMissingTaskDirectoryIsNotAMissingTaskToml(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	_, err := tasks.Load(tasks.Source{Task: missing})
	if err == nil || !strings.Contains(err.Error(), "no task directory: stat "+missing+": no such file or directory") {
		t.Errorf("a missing directory: %v", err)
	}
	empty := t.TempDir()
	_, err = tasks.Load(tasks.Source{Task: empty})
	if err == nil || !strings.Contains(err.Error(), "no task.toml in "+empty+" (a Harbor task directory holds task.toml") {
		t.Errorf("an empty directory: %v", err)
	}
}
