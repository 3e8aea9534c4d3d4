package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/fakellm"
)

// The adversarial suite (issue 11's "Must show"): each test starts the real
// daemon, and the test agent's `attack NAME ARGS` directive performs one
// attack from inside the harness. In sandbox isolation every attack must be
// refused, and the test says by what (the errno or status); a process-
// isolation control, where the attack is not destructive, shows that the
// same attack gets through without the sandbox, so the test can fail.
// docs/security.md's "Threat model" table lists them.

// Isolation levels, as --isolation takes them.
const (
	isoSandbox = "sandbox"
	isoProcess = "process"
)

// advLimits are the limits every adversarial sandbox runs under.
const advLimits = "limits: {memory: 256MiB, pids: 64, cpu: 1}\n"

// attackResult is the JSON line the attack directive says.
type attackResult struct {
	Attack string `json:"attack"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno"`
	Detail string `json:"detail"`
	Count  int    `json:"count"`
	Pid    int    `json:"pid"`
}

func (r attackResult) String() string {
	return fmt.Sprintf("%s ok=%v errno=%q count=%d pid=%d: %s", r.Attack, r.OK, r.Errno, r.Count, r.Pid, r.Detail)
}

// needSandbox skips (fails under CI=true) where the sandbox cannot run:
// the suite runs as root (the private id range) with user namespaces.
func needSandbox(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testbin.Missing(t, "the adversarial suite runs as root (the sandbox's private host id range)")
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		testbin.Missing(t, "no user namespaces: %v", err)
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		testbin.Missing(t, "user namespaces are disabled (user.max_user_namespaces=0)")
	}
}

// advConfig is the test agent's environment at isolation iso, with extra
// YAML appended (limits only in sandbox isolation: process has none).
func advConfig(t testing.TB, iso, extra string) string {
	t.Helper()
	y := fmt.Sprintf("name: adversary\nharness:\n  command: [%q, agent]\n", testharnessBin(t))
	if iso == isoSandbox {
		y += advLimits
	}
	return writeConfig(t, y+extra)
}

// advDaemon starts a daemon at isolation iso with the adversarial config
// (its path in ConfigPath).
func advDaemon(t testing.TB, iso, extra string, flags ...string) *daemon {
	t.Helper()
	needSandbox(t)
	cfg := advConfig(t, iso, extra)
	d := startDaemon(t, spec{Flags: append([]string{"--isolation", iso, "--config", cfg}, flags...)})
	d.ConfigPath = cfg
	return d
}

// advSession is one /ws session of a daemon.
type advSession struct {
	t testing.TB
	d *daemon
	w *rawWS
}

// openSession connects and resets, checking the isolation the reset
// observation reports.
func openSession(t testing.TB, d *daemon, iso string) *advSession {
	t.Helper()
	s := &advSession{t: t, d: d, w: dialRaw(t, d, "/ws", nil)}
	s.reset(iso)
	return s
}

func (s *advSession) reset(iso string) {
	s.t.Helper()
	obs := obsData(s.t, s.w.request(map[string]any{"type": "reset"}))
	if got := meta(s.t, obs)["isolation"]; got != iso {
		s.t.Fatalf("reset reports isolation %v, want %s", got, iso)
	}
}

// step runs one turn and returns the observation.
func (s *advSession) step(msg string) map[string]any {
	s.t.Helper()
	return obsData(s.t, s.w.request(stepFrame(msg)))
}

// say runs one turn and returns its response.
func (s *advSession) say(msg string) string {
	s.t.Helper()
	obs := s.step(msg)
	if md := meta(s.t, obs); md["error_type"] != nil {
		s.t.Fatalf("turn %q ended the episode: %v %v", msg, md["error_type"], md["error"])
	}
	return responseOf(s.t, obs)
}

// env returns the harness's value of name.
func (s *advSession) env(name string) string {
	s.t.Helper()
	r := s.say("env " + name)
	v, ok := strings.CutPrefix(r, name+"=")
	if !ok || v == "<unset>" {
		s.t.Fatalf("the harness has no %s: %q", name, r)
	}
	return v
}

// hostWorkspace returns the host paths of the session's workspace and
// HOME: the harness sees them at fixed paths inside a sandbox, so they are
// found by a marker it writes into its workspace (under the daemon's
// default workspace root, $TMPDIR/harnessd).
func (s *advSession) hostWorkspace() (workspace, home string) {
	s.t.Helper()
	name := fmt.Sprintf(".where-%d", time.Now().UnixNano())
	if got := s.say("write " + name + " here"); !strings.Contains(got, "wrote") {
		s.t.Fatalf("write a marker into the workspace: %q", got)
	}
	found, _ := filepath.Glob(filepath.Join(s.d.Dir, "harnessd", "*", "*", "workspace", name)) // ep-N or disk-N
	if len(found) != 1 {
		s.t.Fatalf("the workspace's marker is in %d places under %s", len(found), s.d.Dir)
	}
	ws := filepath.Dir(found[0])
	return ws, filepath.Join(filepath.Dir(ws), "home")
}

// harnessPid is the host pid state reports (the sandbox's init in sandbox
// isolation, the harness in process isolation).
func (s *advSession) harnessPid() int {
	s.t.Helper()
	sd := obj(s.t, s.w.request(map[string]any{"type": "state"})["data"], "state")
	pid, _ := sd["harness_pid"].(float64)
	if pid <= 0 {
		s.t.Fatalf("state has no harness_pid: %v", sd)
	}
	return int(pid)
}

// ownDoorPort reports whether port is the port of the harness's own
// bridge door (when it has one) (in its own network namespace, a random port can match the
// daemon's: the attack then reaches the harness's own door, legitimately).
func (s *advSession) ownDoorPort(port string) bool {
	s.t.Helper()
	v, ok := strings.CutPrefix(s.say("env HARNESSD_MCP_URL"), "HARNESSD_MCP_URL=http://")
	if !ok {
		return false // no tools, no bridge
	}
	host, _, _ := strings.Cut(v, "/")
	_, p, _ := strings.Cut(host, ":")
	if p == port {
		s.t.Logf("the harness's own bridge door has the daemon's port %s", port)
		return true
	}
	return false
}

// attack performs one attack and returns its outcome.
func (s *advSession) attack(name string, args ...string) attackResult {
	s.t.Helper()
	msg := strings.Join(append([]string{"attack", name}, args...), " ")
	resp := s.say(msg)
	var r attackResult
	if err := json.Unmarshal([]byte(resp), &r); err != nil || r.Attack != name {
		s.t.Fatalf("%s: the harness said %q, not an attack result (%v)", msg, resp, err)
	}
	s.t.Logf("%s -> %s", msg, r)
	return r
}

// refused asserts r failed with one of the errnos.
func refused(t testing.TB, r attackResult, errnos ...string) {
	t.Helper()
	if r.OK {
		t.Errorf("FINDING: attack %s SUCCEEDED in the sandbox: %s", r.Attack, r)
		return
	}
	for _, e := range errnos {
		if r.Errno == e {
			return
		}
	}
	t.Errorf("attack %s was refused by %q, want one of %v: %s", r.Attack, r.Errno, errnos, r)
}

// succeeded asserts a process-isolation control got through.
func succeeded(t testing.TB, r attackResult) {
	t.Helper()
	if !r.OK {
		t.Errorf("control: attack %s failed in process isolation, so the sandbox test proves nothing: %s", r.Attack, r)
	}
}

// TestAdversaryOrchestrationPortFromEmptyEnvironment: a harness child with
// an empty environment calls POST /reset, POST /step and GET /state on the
// daemon's listener. In the sandbox the address is another network
// namespace's loopback: refused. In process isolation the daemon answers.
func TestAdversaryOrchestrationPortFromEmptyEnvironment(t *testing.T) {
	t.Parallel()
	d := advDaemon(t, isoSandbox, "")
	s := openSession(t, d, isoSandbox)
	// The sandbox's own loopback may by chance hold the bridge's door on
	// the daemon's port number: a new episode gets a new sandbox and port.
	_, port, _ := strings.Cut(d.Addr, ":")
	for i := 0; s.ownDoorPort(port); i++ {
		if i == 5 {
			t.Fatalf("five sandboxes in a row had their bridge door on the daemon's port %s", port)
		}
		s.reset(isoSandbox)
	}
	r := s.attack("http-to", d.Addr)
	refused(t, r, "ECONNREFUSED")
	if strings.Contains(r.Detail, "HTTP ") {
		t.Errorf("a request reached a listener from inside the sandbox: %s", r)
	}

	// The control: in process isolation the listener answers the child
	// (what it answers is the peer check's business: logged, not asserted).
	c := advDaemon(t, isoProcess, "")
	cr := openSession(t, c, isoProcess).attack("http-to", c.Addr)
	if cr.Errno != "" || !strings.Contains(cr.Detail, "HTTP ") {
		t.Errorf("control: in process isolation the daemon's listener did not answer the harness: %s", cr)
	}
	t.Logf("process isolation: the peer check %s", map[bool]string{true: "let the child through", false: "refused the child"}[cr.OK])
}

// sharedDir is a directory outside /tmp, readable by every host uid
// (/var/tmp where the host has it), removed when the test ends.
func sharedDir(t testing.TB) string {
	t.Helper()
	base := "/var/tmp"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = ""
	}
	d, err := os.MkdirTemp(base, "harnessd-adversary-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o755)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestAdversaryAPITokenFile: with an API token file, the harness looks for
// its path in /proc/<daemon>/cmdline and reads it. In the sandbox the
// daemon's /proc entry does not exist and the file is hidden.
func TestAdversaryAPITokenFile(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			// Outside /tmp (the sandbox's /tmp is private anyway): only
			// the daemon's hiding keeps these files from the harness.
			dir := sharedDir(t)
			tokenFile := filepath.Join(dir, "api-token")
			token := "adv-token-" + newMarker()
			if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "env.yaml")
			if err := os.Rename(advConfig(t, iso, ""), cfg); err != nil {
				t.Fatal(err)
			}
			needSandbox(t)
			d := startDaemon(t, spec{Flags: []string{"--isolation", iso, "--config", cfg, "--api-token-file", tokenFile}})
			d.ConfigPath = cfg
			w, _, err := tryDialRaw(t, d, "/ws", map[string][]string{"Authorization": {"Bearer " + token}})
			if err != nil {
				t.Fatalf("dial with the token: %v", err)
			}
			s := &advSession{t: t, d: d, w: w}
			s.reset(iso)
			cmdline := s.attack("proc-cmdline", strconv.Itoa(d.Pid()))
			file := s.attack("read-file", tokenFile)
			config := s.attack("read-file", d.ConfigPath)
			if iso == isoSandbox {
				refused(t, cmdline, "ENOENT")
				// Hidden: an empty file in the file's place.
				refused(t, file, "")
				refused(t, config, "")
				if strings.Contains(file.Detail, token) {
					t.Errorf("FINDING: the sandboxed harness read the API token: %s", file)
				}
				return
			}
			succeeded(t, config)
			succeeded(t, cmdline)
			succeeded(t, file)
			if !strings.Contains(file.Detail, token) {
				t.Errorf("control: the token file read as %s", file)
			}
		})
	}
}

// TestAdversaryProcOfTheDaemon: the daemon's /proc environ, cmdline and mem,
// and ptrace. In the sandbox the daemon's pid does not exist (PID
// namespace, fresh proc) and ptrace is refused by seccomp.
func TestAdversaryProcOfTheDaemon(t *testing.T) {
	t.Parallel()
	d := advDaemon(t, isoSandbox, "")
	s := openSession(t, d, isoSandbox)
	pid := strconv.Itoa(d.Pid())
	refused(t, s.attack("proc-environ", pid), "ENOENT")
	refused(t, s.attack("proc-cmdline", pid), "ENOENT")
	refused(t, s.attack("proc-mem", pid), "ENOENT")
	refused(t, s.attack("ptrace", pid), "EPERM", "ESRCH")

	c := advDaemon(t, isoProcess, "")
	cs := openSession(t, c, isoProcess)
	cpid := strconv.Itoa(c.Pid())
	env := cs.attack("proc-environ", cpid)
	succeeded(t, env)
	if !strings.Contains(env.Detail, markerVar) && env.Count == 0 {
		t.Errorf("control: the daemon's environment read as %s", env)
	}
	succeeded(t, cs.attack("proc-cmdline", cpid))
	succeeded(t, cs.attack("proc-mem", cpid))
	// ptrace of the process-isolated daemon is not tried: an attach stops
	// the daemon.
}

// TestAdversaryKillTheDaemon: SIGKILL of the daemon from the sandbox. Only
// in the sandbox (the control would kill the daemon); process isolation's
// control probes with signal 0.
func TestAdversaryKillTheDaemon(t *testing.T) {
	t.Parallel()
	d := advDaemon(t, isoSandbox, "")
	s := openSession(t, d, isoSandbox)
	refused(t, s.attack("kill", strconv.Itoa(d.Pid()), "KILL"), "ESRCH")
	refused(t, s.attack("kill", "-1", "KILL"), "ESRCH")
	if got := s.say("count"); !strings.Contains(got, "turns:") {
		t.Fatalf("the session did not survive: %q", got)
	}
	d.Health()

	c := advDaemon(t, isoProcess, "")
	succeeded(t, openSession(t, c, isoProcess).attack("kill", strconv.Itoa(c.Pid()), "0"))
}

// TestAdversaryJoinCgroup: the harness writes its pid into every
// cgroup.procs it can find, the root ones included. Only in the sandbox
// (the control would move a process of this machine into the root
// cgroup): its /sys is an empty read-only tmpfs.
func TestAdversaryJoinCgroup(t *testing.T) {
	t.Parallel()
	d := advDaemon(t, isoSandbox, "")
	r := openSession(t, d, isoSandbox).attack("join-cgroup")
	refused(t, r, "ENOENT", "EROFS", "EACCES", "EPERM")
	if r.Count != 0 {
		t.Errorf("FINDING: joined %d cgroups: %s", r.Count, r)
	}
}

// TestAdversaryWrites: writes to /etc, to another session's workspace and
// HOME, and to the daemon's directory; and reading the other session's
// /proc (its bridge URL and token). In the sandbox every one is refused and
// nothing appears on the host; in process isolation they go through.
func TestAdversaryWrites(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			d := advDaemon(t, iso, "", "--max-sessions", "2")
			a := openSession(t, d, iso)
			b := openSession(t, d, iso)
			// b's host paths: what an attacker who knew them would try (in
			// the sandbox b itself sees other, fixed paths).
			bWork, bHome := b.hostWorkspace()
			bPid := strconv.Itoa(b.harnessPid())
			targets := []string{
				filepath.Join(bWork, "pwned-"+d.Marker),
				filepath.Join(bHome, "pwned-"+d.Marker),
				filepath.Join(d.Dir, "pwned-"+d.Marker),
			}
			if iso == isoSandbox {
				// /etc only in the sandbox: the control would write the
				// machine's /etc.
				r := a.attack("write-file", "/etc/harnessd-pwned-"+d.Marker)
				refused(t, r, "EROFS")
			}
			for _, p := range targets {
				r := a.attack("write-file", p)
				_, statErr := os.Stat(p)
				if iso == isoSandbox {
					refused(t, r, "EROFS", "ENOENT", "EACCES")
					if statErr == nil {
						t.Errorf("FINDING: %s appeared on the host", p)
					}
					continue
				}
				succeeded(t, r)
				if statErr != nil {
					t.Errorf("control: %s was not written: %v", p, statErr)
				}
			}
			list := a.attack("list-dir", bWork)
			env := a.attack("proc-environ", bPid)
			sig := a.attack("kill", bPid, "0")
			if iso == isoSandbox {
				refused(t, list, "ENOENT", "EACCES")
				refused(t, env, "ENOENT")
				refused(t, sig, "ESRCH")
				return
			}
			succeeded(t, list)
			succeeded(t, env)
			succeeded(t, sig)
		})
	}
}

// fakeLLM starts the fake engine for the model gateway.
func fakeLLM(t testing.TB) string {
	t.Helper()
	srv := fakellm.New(fakellm.Options{Engine: true})
	base, err := srv.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return base
}

// TestAdversaryOtherSessionsDoors: session A uses session B's bridge URL and
// token (tools/list) and B's model gateway URL and key (GET …/v1/models).
// In the sandbox B's doors are on B's network namespace's loopback: from A
// the address is A's own loopback, where nothing (or A's own door, which
// refuses B's token) listens; so does the model upstream on the host's
// loopback. In process isolation all three answer.
func TestAdversaryOtherSessionsDoors(t *testing.T) {
	t.Parallel()
	upstream := fakeLLM(t)
	model := fmt.Sprintf("  model: {url: %q, name: adv-model, upstream: engine}\n", upstream+"/v1")
	tools := fmt.Sprintf("tools:\n  - name: demo\n    command: [%q, tools]\n", testharnessBin(t))
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			needSandbox(t)
			y := fmt.Sprintf("name: adversary\nharness:\n  command: [%q, agent]\n%s%s", testharnessBin(t), model, tools)
			if iso == isoSandbox {
				y += advLimits
			}
			d := startDaemon(t, spec{Flags: []string{"--isolation", iso, "--config", writeConfig(t, y), "--max-sessions", "2"}})
			a := openSession(t, d, iso)
			b := openSession(t, d, iso)
			mcpURL, mcpToken := b.env("HARNESSD_MCP_URL"), b.env("HARNESSD_MCP_TOKEN")
			modelURL, modelKey := b.env("HARNESSD_MODEL_URL"), b.env("HARNESSD_MODEL_API_KEY")
			// B itself reaches its doors: the attack's address and
			// credentials are right.
			if r := b.attack("mcp-list", mcpURL, mcpToken); !r.OK {
				t.Fatalf("B cannot list its own tools: %s", r)
			}
			if r := b.attack("http-get", modelURL+"/v1/models", modelKey); !r.OK {
				t.Fatalf("B cannot reach its own model gateway: %s", r)
			}
			mcp := a.attack("mcp-list", mcpURL, mcpToken)
			gw := a.attack("http-get", modelURL+"/v1/models", modelKey)
			// The upstream itself (a host loopback listener: the engine
			// the daemon holds the real key for).
			up := a.attack("http-get", upstream+"/v1/models")
			// The orchestration routes on A's own doors: the bridge and
			// the gateway serve nothing of the daemon's surface.
			for _, door := range []string{a.env("HARNESSD_MCP_URL"), a.env("HARNESSD_MODEL_URL")} {
				host := strings.TrimPrefix(door, "http://")
				host, _, _ = strings.Cut(host, "/")
				if r := a.attack("http-to", host); r.OK {
					t.Errorf("FINDING: the orchestration routes answer 2xx on the door %s: %s", host, r)
				}
			}
			if iso == isoSandbox {
				// ECONNREFUSED; "" with a 401 when A's own door has B's port.
				refused(t, mcp, "ECONNREFUSED", "")
				refused(t, gw, "ECONNREFUSED", "")
				refused(t, up, "ECONNREFUSED")
				return
			}
			succeeded(t, mcp)
			succeeded(t, gw)
			succeeded(t, up)
		})
	}
}

// TestAdversaryForkFlood: the harness forks until refused. The sandbox's
// pids limit (64, the init's threads included) stops it; the episode then
// either goes on or ends with resource_limit, and the daemon stays healthy
// and serves a new episode. No process-isolation control: it has no limit
// and the flood would hit this machine.
func TestAdversaryForkFlood(t *testing.T) {
	t.Parallel()
	d := advDaemon(t, isoSandbox, "")
	s := openSession(t, d, isoSandbox)
	obs := s.step("attack forkflood 512")
	md := meta(t, obs)
	if md["error_type"] != nil {
		if md["error_type"] != "resource_limit" || obs["done"] != true {
			t.Fatalf("the flood ended the episode with %v (done %v), want resource_limit: %v", md["error_type"], obs["done"], md["error"])
		}
		t.Logf("the flood ended the episode: %v", md["error"])
	} else {
		var r attackResult
		if err := json.Unmarshal([]byte(responseOf(t, obs)), &r); err != nil {
			t.Fatalf("not an attack result: %q", responseOf(t, obs))
		}
		t.Logf("attack forkflood 512 -> %s", r)
		refused(t, r, "EAGAIN")
		if r.Count <= 0 || r.Count >= 64 {
			t.Errorf("the flood started %d children, want between 1 and the pids limit (64)", r.Count)
		}
		if got := s.say("count"); got != "turns: 2" {
			t.Errorf("after the flood the episode answers %q", got)
		}
	}
	d.Health()
	s.reset(isoSandbox)
	if got := s.say("reply alive"); got != "alive" {
		t.Errorf("a new episode after the flood answers %q", got)
	}
}

// TestAdversaryMemoryHog: the harness touches 1 GiB under a 256 MiB limit:
// the OOM killer ends it and the episode reports resource_limit. Opt-in
// (HARNESSD_TEST_OOM=1): the OOM kill happens inside the test runner's
// memory cgroup, and this project's machines end the whole run on one.
func TestAdversaryMemoryHog(t *testing.T) {
	if os.Getenv("HARNESSD_TEST_OOM") != "1" {
		t.Skip("opt-in with HARNESSD_TEST_OOM=1: an OOM kill in the test runner's memory cgroup ends the whole run on this project's machines")
	}
	t.Parallel()
	d := advDaemon(t, isoSandbox, "")
	s := openSession(t, d, isoSandbox)
	obs := s.step("attack memhog 1024M")
	md := meta(t, obs)
	if md["error_type"] != "resource_limit" || obs["done"] != true {
		t.Fatalf("memory hog: error_type %v, done %v, response %v; want resource_limit", md["error_type"], obs["done"], md["response"])
	}
	d.Health()
}

// TestAdversaryPathEntryDoesNotExposeTheDaemonsHome: the daemon's HOME is
// hidden in every sandbox, and PATH entries under hidden directories are
// bound back read-only so the harness finds its programs. A PATH entry
// that IS the daemon's HOME (or holds a hidden path) must not be bound
// back: it would show everything the hiding covers. The HOME here is world-
// readable, so only the hiding stands between the harness and the secret.
func TestAdversaryPathEntryDoesNotExposeTheDaemonsHome(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) {
			t.Parallel()
			needSandbox(t)
			home := sharedDir(t)
			secret := filepath.Join(home, "secret")
			if err := os.WriteFile(secret, []byte("daemon-secret-"+newMarker()), 0o644); err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, spec{
				Flags: []string{"--isolation", iso, "--config", advConfig(t, iso, "")},
				Env:   []string{"HOME=" + home, "PATH=" + home + string(os.PathListSeparator) + os.Getenv("PATH")},
			})
			r := openSession(t, d, iso).attack("read-file", secret)
			if iso == isoSandbox {
				refused(t, r, "", "ENOENT")
				return
			}
			succeeded(t, r)
		})
	}
}
