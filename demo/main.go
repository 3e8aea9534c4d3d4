// Command demo shows harnessd end to end in a few seconds (run it with
// `make demo`): it starts the daemon with the scriptable test agent, its MCP
// tools and two rubrics (env.yaml), plays a multi-turn episode over OpenEnv's
// /ws protocol with the Go client (printing the URL of the daemon's web
// console once it serves it), streams a production /harness turn live and
// cancels it, then stops both daemons with SIGTERM and checks that every
// process they started is gone. It exits non-zero if anything is not as
// shown.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/internal/printer"
	"github.com/harnessd/harnessd/wire"
)

var (
	out = printer.New(os.Stdout)
	// daemons still running, stopped (killed) on a failure
	running []*daemon
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the harnessd and testharness binaries (make build)")
	config := flag.String("config", filepath.Join("demo", "env.yaml"), "environment configuration")
	example := flag.String("example", filepath.Join("demo", "examples", "helpdesk", "env.yaml"), "the worked example's configuration (a simulated user, mapped tools)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *bin, *config, *example); err != nil {
		for _, d := range running {
			d.kill()
		}
		fmt.Fprintln(os.Stderr, out.Paint("31", "demo failed: "+err.Error()))
		os.Exit(1)
	}
}

func run(ctx context.Context, bin, config, example string) error {
	harnessd, err := filepath.Abs(filepath.Join(bin, "harnessd"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(harnessd); err != nil {
		return fmt.Errorf("%v (run `make build` first)", err)
	}
	tmp, err := os.MkdirTemp("", "harnessd-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	heading("1. simulation: an episode over /ws, OpenEnv's protocol")
	sim, err := startDaemon(ctx, harnessd, tmp, "simulation", "serve", "--config", config)
	if err != nil {
		return err
	}
	if err := episode(ctx, sim); err != nil {
		return err
	}

	heading("2. production: a /harness turn streaming live, cancelled mid-way")
	prod, err := startDaemon(ctx, harnessd, tmp, "production", "serve", "--config", config, "--mode", "production")
	if err != nil {
		return err
	}
	h, err := streaming(ctx, prod)
	if err != nil {
		return err
	}

	heading("3. a simulated user plays whole episodes (demo/examples/helpdesk)")
	user, err := startDaemon(ctx, harnessd, tmp, "helpdesk", "serve", "--config", example)
	if err != nil {
		return err
	}
	if err := userEpisodes(ctx, user); err != nil {
		return err
	}

	heading("4. shutdown: SIGTERM drains each daemon")
	if err := sim.shutdown(nil); err != nil {
		return err
	}
	if err := prod.shutdown(h); err != nil {
		return err
	}
	if err := user.shutdown(nil); err != nil {
		return err
	}
	fmt.Println()
	fmt.Println(out.Paint("1;32", "demo complete.") + " Next: `make test`, or wrap your own harness: bin/harnessd serve -- ./my-harness")
	return nil
}

func heading(s string) {
	fmt.Printf("\n%s\n", out.Paint("1;34", "━━ "+s+" ━━"))
}

func note(format string, a ...any) {
	fmt.Println(out.Paint("2", "   "+fmt.Sprintf(format, a...)))
}

// consoleServes checks that the daemon serves its web console page.
func consoleServes(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/web", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("web console: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		return fmt.Errorf("web console: GET %s/web answered %s (%s)", url, res.Status, res.Header.Get("Content-Type"))
	}
	return nil
}

// episode plays three turns: a tool call, a turn that shows the
// conversation persists, and the final answer that the grader scores.
func episode(ctx context.Context, d *daemon) error {
	env, err := client.Dial(ctx, d.url, nil)
	if err != nil {
		return err
	}
	defer env.Close()
	note("connected to %s/ws — a trainer would use OpenEnv's GenericEnvClient the same way", d.url)
	if err := consoleServes(ctx, d.url); err != nil {
		return err
	}
	note("web console: %s/web — open it to watch the sessions live and read each turn", d.url)

	obs, err := env.Reset(ctx, client.ResetOptions{EpisodeID: "demo-episode"})
	if err != nil {
		return err
	}
	out.Observation("reset", obs)
	if obs.Done || len(obs.Metadata.InjectedTools) == 0 {
		return fmt.Errorf("reset: unexpected observation %+v", obs.Metadata)
	}

	turns := []struct {
		message string
		reward  float64
		done    bool
	}{
		{`reply Let me add 2 and 3 with the environment's tool.;;tool add {"a":2,"b":3}`, 0.5, false},
		{`think I should double-check what was asked.;;history`, 0, false},
		{`reply The answer is 5.;;done`, 1, true},
	}
	for i, t := range turns {
		fmt.Printf("\n%s %s\n", out.Paint("1", fmt.Sprintf("step %d ▶", i+1)), printer.Clip(t.message, 110))
		obs, err := env.Step(ctx, t.message)
		if err != nil {
			return err
		}
		for _, e := range obs.Metadata.TurnEvents {
			out.Event(e)
		}
		out.Observation(fmt.Sprintf("turn %d", obs.Metadata.TurnNumber), obs)
		if obs.Metadata.ErrorType != "" || obs.Reward == nil || *obs.Reward != t.reward || obs.Done != t.done {
			return fmt.Errorf("turn %d: reward %v done %v error %q; want reward %g done %v",
				i+1, obs.Reward, obs.Done, obs.Metadata.Error, t.reward, t.done)
		}
	}
	st, err := env.State(ctx)
	if err != nil {
		return err
	}
	fmt.Println()
	note("state: %s", printer.Compact(st))
	if st.StepCount != 3 || !st.Done {
		return fmt.Errorf("state after the episode: %+v", st)
	}
	note("tool events come twice: as the agent reported them (harness) and as the bridge saw them (bridge);")
	note("the grader tool is hidden from the agent and scored the final answer after the turn.")
	return nil
}

// streaming opens /harness, runs a turn whose events print as they arrive,
// cancels it once it is under way, and shows the conversation goes on. The
// connection stays open for the shutdown.
func streaming(ctx context.Context, d *daemon) (*client.Harness, error) {
	h, err := client.DialHarness(ctx, d.url, nil)
	if err != nil {
		return nil, err
	}
	note("session_started: session %s, harness %q", h.SessionID(), h.Name())
	msg := "reply Working on a long task...;;sleep 300ms;;reply still working;;sleep 30s;;reply (never reached)"
	fmt.Printf("\n%s %s\n", out.Paint("1", "message ▶"), msg)
	start := time.Now()
	cancelled := false
	end, err := h.Send(ctx, msg, func(e wire.Event) {
		fmt.Printf("%s", out.Paint("2", fmt.Sprintf("+%4dms", time.Since(start).Milliseconds())))
		out.Event(e)
		if isText(e, "still working") && !cancelled {
			cancelled = true
			fmt.Println(out.Paint("33", "  ✋ client sends {\"type\":\"cancel\"}"))
			if err := h.Cancel(ctx); err != nil {
				fmt.Println(out.Paint("31", "  cancel: "+err.Error()))
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if tc, _ := end.Data.(*wire.TurnComplete); tc == nil || !tc.Cancelled || !cancelled {
		return nil, fmt.Errorf("the turn was not cancelled: %v", end.Data)
	}
	note("the turn ended early as cancelled; the harness keeps its conversation:")
	fmt.Printf("\n%s %s\n", out.Paint("1", "message ▶"), "count")
	end, err = h.Send(ctx, "count", func(e wire.Event) { out.Event(e) })
	if err != nil {
		return nil, err
	}
	if tc, _ := end.Data.(*wire.TurnComplete); tc == nil || tc.Response != "turns: 2" {
		return nil, fmt.Errorf("after the cancel: %v", end.Data)
	}
	return h, nil
}

// daemon is a running `harnessd serve`.
type daemon struct {
	name   string
	url    string
	cmd    *exec.Cmd
	log    *bytes.Buffer
	exited chan struct{}
}

func startDaemon(ctx context.Context, harnessd, tmp, name string, args ...string) (*daemon, error) {
	addr := filepath.Join(tmp, name+".addr")
	args = append(args, "--listen", "127.0.0.1:0", "--addr-file", addr, "--log-level", "warn", "--log-format", "text")
	d := &daemon{name: name, cmd: exec.Command(harnessd, args...), log: &bytes.Buffer{}, exited: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	running = append(running, d)
	go func() {
		d.cmd.Wait()
		close(d.exited)
	}()
	for {
		if b, err := os.ReadFile(addr); err == nil && len(bytes.TrimSpace(b)) > 0 {
			d.url = "http://" + strings.TrimSpace(string(b))
			break
		}
		select {
		case <-d.exited:
			return nil, fmt.Errorf("harnessd %s exited: %s\n%s", name, d.cmd.ProcessState, d.log)
		case <-ctx.Done():
			return nil, fmt.Errorf("harnessd %s did not start: %w", name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	note("started: harnessd %s  (pid %d, %s)", strings.Join(args[:len(args)-8], " "), d.cmd.Process.Pid, d.url)
	return d, nil
}

// shutdown sends SIGTERM, waits for exit 0 and checks that every process the
// daemon had started is gone. h, if set, is an open /harness connection that
// must be closed with 1001 "going away".
func (d *daemon) shutdown(h *client.Harness) error {
	tree := descendants(d.cmd.Process.Pid)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("harnessd %s did not exit after SIGTERM:\n%s", d.name, d.log)
	}
	code := d.cmd.ProcessState.ExitCode()
	if code != 0 {
		return fmt.Errorf("harnessd %s exited with %d:\n%s", d.name, code, d.log)
	}
	if h != nil {
		_, err := h.Send(context.Background(), "are you there?", nil)
		if err == nil || !strings.Contains(err.Error(), "1001") {
			return fmt.Errorf("the open /harness connection was not closed with 1001: %v", err)
		}
		note("the open /harness connection was closed by the server: %v", err)
		h.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, p := range tree {
			if p.alive() {
				left = append(left, p.String())
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of harnessd %s survived it: %s", d.name, strings.Join(left, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
	var names []string
	for _, p := range tree {
		names = append(names, p.String())
	}
	what := "nothing of it was left running"
	if len(names) > 0 {
		what = "gone: " + strings.Join(names, ", ")
	}
	fmt.Printf("   harnessd %s: SIGTERM → drained, exit code 0; %s\n", d.name, what)
	for i, r := range running {
		if r == d {
			running = append(running[:i], running[i+1:]...)
			break
		}
	}
	return nil
}

func (d *daemon) kill() {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
	}
}

// proc is a process identified by pid and start time.
type proc struct {
	pid   int
	start string
	name  string
}

func (p proc) String() string { return fmt.Sprintf("%s[%d]", p.name, p.pid) }

func stat(pid int) (ppid int, start, name string, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", "", 0, false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return 0, "", "", 0, false
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 20 {
		return 0, "", "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[19], string(b[i+1 : j]), f[0][0], true
}

func (p proc) alive() bool {
	_, start, _, state, ok := stat(p.pid)
	return ok && start == p.start && state != 'Z'
}

// descendants lists the live descendants of pid.
func descendants(pid int) []proc {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]proc{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, start, name, state, ok := stat(n); ok && state != 'Z' {
			if argv, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil {
				if f := strings.Split(strings.TrimRight(string(argv), "\x00"), "\x00"); len(f) > 1 {
					name = filepath.Base(f[0]) + " " + f[1]
				}
			}
			children[ppid] = append(children[ppid], proc{pid: n, start: start, name: name})
		}
	}
	var out []proc
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c.pid)
		}
	}
	walk(pid)
	return out
}

// isText reports whether e is a text_output of exactly text.
func isText(e wire.Event, text string) bool {
	t, ok := e.Data.(*wire.TextOutput)
	return ok && t.Text == text
}
