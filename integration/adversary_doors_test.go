package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/testbin"
)

// floodNOFILE is the daemon's RLIMIT_NOFILE in the door-flood test: low
// enough that a flood reaches it in a second, so that its reserve (the
// top quarter, descriptors 768-1023) is what keeps /health and resets
// alive once the doors are full.
const floodNOFILE = 1024

// floodPerDoor is how many connections the test opens to each door it
// floods: far more than the door's cap (doorcap.DefaultMaxConns).
const floodPerDoor = 3000

// healthBudget is how long /health may take while a door floods.
const healthBudget = 100 * time.Millisecond

// flooded counts one door flood's connections.
type flooded struct {
	door      string
	attempted int
	held      []net.Conn // answered 200 and kept alive
	// refused counts the 503s by the reason the door named; closed the
	// connections that ended unanswered (reset with the request unread).
	refused map[string]int
	closed  int
}

func (f *flooded) String() string {
	return fmt.Sprintf("%s: %d attempted, %d held, refused %v, %d closed unanswered", f.door, f.attempted, len(f.held), f.refused, f.closed)
}

// release closes the connections the flood holds.
func (f *flooded) release() {
	for _, c := range f.held {
		c.Close()
	}
	f.held = nil
}

// flood opens n connections to addr from inside ns (the episode's own
// network namespace: the harness's side of its door), sends req on each
// and keeps every connection the door answers 200.
func flood(t *testing.T, ns netns.NsHandle, door, addr, req string, n int) *flooded {
	t.Helper()
	f := &flooded{door: door, refused: map[string]int{}}
	t.Cleanup(f.release)
	err := inNetNS(ns, func() error {
		for range n {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return fmt.Errorf("dial %s after %d connections: %w", addr, f.attempted, err)
			}
			f.attempted++
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, req); err != nil {
				f.closed++
				c.Close()
				continue
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				c.Close()
				return fmt.Errorf("connection %d to %s: no answer in 5 s (neither served nor refused)", f.attempted, door)
			case err != nil:
				f.closed++
				c.Close()
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				_ = c.SetDeadline(time.Time{})
				f.held = append(f.held, c)
			case http.StatusServiceUnavailable:
				f.refused[resp.Header.Get("X-Harnessd-Refused")]++
				c.Close()
			default:
				c.Close()
				return fmt.Errorf("connection %d to %s: status %d", f.attempted, door, resp.StatusCode)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("flood %s: %v", door, err)
	}
	t.Logf("flood %s", f)
	return f
}

// healthProbe times GET /health on fresh connections (as an orchestrator's
// liveness probe does) every 10 ms until stopped.
type healthProbe struct {
	mu     sync.Mutex
	lat    []time.Duration
	errs   []string
	stop   context.CancelFunc
	done   chan struct{}
	client *http.Client
}

func probeHealth(d *daemon) *healthProbe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &healthProbe{stop: cancel, done: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			start := time.Now()
			resp, err := p.client.Get(d.URL + "/health")
			el := time.Since(start)
			p.mu.Lock()
			if err == nil && resp.StatusCode == http.StatusOK {
				p.lat = append(p.lat, el)
			} else if err != nil {
				p.errs = append(p.errs, err.Error())
			} else {
				p.errs = append(p.errs, resp.Status)
			}
			p.mu.Unlock()
			if resp != nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	return p
}

// finish stops the probe and checks every answer came within budget.
func (p *healthProbe) finish(t *testing.T, phase string) {
	t.Helper()
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	lat := slices.Clone(p.lat)
	slices.Sort(lat)
	if len(lat) == 0 {
		t.Fatalf("%s: no /health answer at all (errors %v)", phase, p.errs)
	}
	t.Logf("%s: /health answered %d times, p50 %s, max %s; %d failures", phase, len(lat), lat[len(lat)/2], lat[len(lat)-1], len(p.errs))
	if len(p.errs) > 0 {
		t.Errorf("%s: /health failed %d times: %v", phase, len(p.errs), p.errs[:min(len(p.errs), 5)])
	}
	// Every probe must be answered; the budget holds for nine in ten of
	// them: the slowest one measures the machine's scheduling under a
	// parallel test run as much as the daemon (it is reported above).
	if p90 := lat[len(lat)*9/10]; p90 > healthBudget {
		t.Errorf("%s: /health took %s at p90 (over %s)", phase, p90, healthBudget)
	}
}

// fdCount is the number of descriptors pid holds.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatalf("the daemon's descriptors: %v", err)
	}
	return len(ents)
}

// nofileOf reads pid's RLIMIT_NOFILE (soft, hard) from /proc.
func nofileOf(t *testing.T, pid int) (soft, hard int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatalf("the daemon's limits: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				soft, _ = strconv.Atoi(f[0])
				hard, _ = strconv.Atoi(f[1])
				return soft, hard
			}
		}
	}
	t.Fatalf("no Max open files in the daemon's limits:\n%s", b)
	return 0, 0
}

// doorAddr is the host:port of a door URL (http://127.0.0.1:P[/path]).
func doorAddr(u string) string {
	a := strings.TrimPrefix(u, "http://")
	a, _, _ = strings.Cut(a, "/")
	return a
}

// doors are one episode's door addresses and credentials.
type doors struct {
	model, modelKey, mcp, mcpToken string
}

func (s *advSession) doors() doors {
	return doors{
		model: doorAddr(s.env("HARNESSD_MODEL_URL")), modelKey: s.env("HARNESSD_MODEL_API_KEY"),
		mcp: doorAddr(s.env("HARNESSD_MCP_URL")), mcpToken: s.env("HARNESSD_MCP_TOKEN"),
	}
}

// modelRequest is a keyed keep-alive model listing; mcpRequest a keyed
// keep-alive MCP initialize.
func (d doors) modelRequest() string {
	return "GET /v1/models HTTP/1.1\r\nHost: " + d.model + "\r\nAuthorization: Bearer " + d.modelKey + "\r\n\r\n"
}

func (d doors) mcpRequest() string {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`
	return "POST /mcp HTTP/1.1\r\nHost: " + d.mcp + "\r\nAuthorization: Bearer " + d.mcpToken +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// sessionNS is the network namespace of a session's harness (the test's
// own in process isolation).
func sessionNS(t *testing.T, s *advSession) netns.NsHandle {
	t.Helper()
	ns, err := netns.GetFromPid(s.harnessPid())
	if err != nil {
		t.Fatalf("the harness's network namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// TestAdversaryDoorFlood: issue 22's door exhaustion. A daemon whose
// RLIMIT_NOFILE is 1024 runs three sandboxed sessions with a model gateway
// and a tool bridge. From inside session A's network namespace (where its
// harness sits) the test opens 3,000 keyed keep-alive connections to each
// of A's two doors: each door holds its cap (256) and answers the rest 503
// at accept. Meanwhile /health answers every 10 ms probe within 100 ms,
// session B's own gateway still answers its harness, B resets and a new
// session C starts. Then B's doors flood too: the doors fill the
// descriptors below the reserve and refuse the rest (fd_reserve), the
// daemon never reaches its limit, /health still answers within 100 ms and
// C resets. The keyless GET / (the red team's route) closes its
// connection. Once the floods let go, A's gateway serves A's harness again.
// Without the caps the first flood alone takes all 1024 descriptors (the
// red team's finding: 20,000 of 20,000), which internal/doorcap's
// TestReserve control shows for a bare listener.
//
// The same runs in process isolation, where the doors are the host's
// 127.0.0.1 listeners any local process reaches.
func TestAdversaryDoorFlood(t *testing.T) {
	for _, iso := range []string{isoSandbox, isoProcess} {
		t.Run(iso, func(t *testing.T) { doorFlood(t, iso) })
	}
}

func doorFlood(t *testing.T, iso string) {
	needSandbox(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		testbin.Missing(t, "no sh to lower the daemon's RLIMIT_NOFILE: %v", err)
	}
	upstream := fakeLLM(t)
	y := fmt.Sprintf("name: adversary\nharness:\n  command: [%q, agent]\n  model: {url: %q, name: adv-model, upstream: engine}\n"+
		"tools:\n  - name: demo\n    command: [%q, tools]\n", testharnessBin(t), upstream+"/v1", testharnessBin(t))
	if iso == isoSandbox {
		y += advLimits
	}
	d := startDaemon(t, spec{
		Flags: []string{"--isolation", iso, "--config", writeConfig(t, y), "--max-sessions", "3"},
		Start: func(c *exec.Cmd) error {
			c.Args = append([]string{"sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, floodNOFILE), c.Path}, c.Args[1:]...)
			c.Path = sh
			return c.Start()
		},
	})
	if soft, hard := nofileOf(t, d.Pid()); soft != floodNOFILE || hard != floodNOFILE {
		t.Fatalf("the daemon's RLIMIT_NOFILE is %d:%d, want %d", soft, hard, floodNOFILE)
	}
	reserve := doorcap.ReserveFor(floodNOFILE)
	a := openSession(t, d, iso)
	b := openSession(t, d, iso)
	ad, bd := a.doors(), b.doors()
	aNS := sessionNS(t, a)
	t.Logf("daemon descriptors before the flood: %d of %d (doors keep none at %d or above)", fdCount(t, d.Pid()), floodNOFILE, floodNOFILE-reserve)

	// The red team's route: the keyless probe answers and closes.
	probe := flood(t, aNS, "A's gateway GET /", ad.model, "GET / HTTP/1.1\r\nHost: "+ad.model+"\r\n\r\n", 1)
	if len(probe.held) != 1 {
		t.Fatalf("GET / on A's gateway was not answered: %s", probe)
	}
	_ = probe.held[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := probe.held[0].Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("GET / kept its connection: read %d, %v (want EOF: Connection: close)", n, err)
	}
	probe.release()

	// Phase 1: A floods both its doors.
	hp := probeHealth(d)
	start := time.Now()
	gw := flood(t, aNS, "A's gateway", ad.model, ad.modelRequest(), floodPerDoor)
	mcp := flood(t, aNS, "A's bridge", ad.mcp, ad.mcpRequest(), floodPerDoor)
	t.Logf("phase 1: %d connections in %s; daemon descriptors %d", gw.attempted+mcp.attempted, time.Since(start).Round(time.Millisecond), fdCount(t, d.Pid()))
	for _, f := range []*flooded{gw, mcp} {
		if len(f.held) != doorcap.DefaultMaxConns {
			t.Errorf("%s: held %d, want the cap %d", f.door, len(f.held), doorcap.DefaultMaxConns)
		}
		if f.refused[doorcap.ReasonCap]+f.closed != f.attempted-len(f.held) {
			t.Errorf("%s: refusals other than the cap: %s", f.door, f)
		}
	}
	// Another session's work goes on while A holds its doors full.
	if r := b.attack("http-get", "http://"+bd.model+"/v1/models", bd.modelKey); !r.OK {
		t.Errorf("B's harness cannot reach its own gateway while A floods: %s", r)
	}
	b.reset(iso)
	if got := b.say("reply after-reset"); got != "after-reset" {
		t.Errorf("B's turn after its reset: %q", got)
	}
	c := openSession(t, d, iso)
	hp.finish(t, "phase 1 (A's doors full)")

	// Phase 2: B floods too; the doors reach the reserve.
	bd = b.doors()
	bNS := sessionNS(t, b)
	hp = probeHealth(d)
	bgw := flood(t, bNS, "B's gateway", bd.model, bd.modelRequest(), floodPerDoor)
	bmcp := flood(t, bNS, "B's bridge", bd.mcp, bd.mcpRequest(), floodPerDoor)
	fds := fdCount(t, d.Pid())
	t.Logf("phase 2: daemon descriptors %d of %d", fds, floodNOFILE)
	if bgw.refused[doorcap.ReasonReserve]+bmcp.refused[doorcap.ReasonReserve] == 0 {
		t.Errorf("B's flood never reached the descriptor reserve: %s; %s", bgw, bmcp)
	}
	if fds >= floodNOFILE-int(reserve)/2 {
		t.Errorf("the doors took the daemon to %d of %d descriptors: into the reserve", fds, floodNOFILE)
	}
	c.reset(iso)
	if got := c.say("reply in-reserve"); got != "in-reserve" {
		t.Errorf("C's turn with the doors at the reserve: %q", got)
	}
	hp.finish(t, "phase 2 (doors at the reserve)")
	if !strings.Contains(d.Log(), doorcap.ReasonReserve) {
		t.Errorf("the daemon did not log the reserve refusals")
	}

	// The floods let go: A's harness reaches its gateway again.
	for _, f := range []*flooded{gw, mcp, bgw, bmcp} {
		f.release()
	}
	// The daemon closes its ends as it reads their EOFs: wait (polling
	// its descriptor table, up to 10 s) until most of them are gone.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); fdCount(t, d.Pid()) > fds-2*doorcap.DefaultMaxConns && time.Now().Before(deadline); {
		<-tick.C
	}
	if r := a.attack("http-get", "http://"+ad.model+"/v1/models", ad.modelKey); !r.OK {
		t.Errorf("A's harness cannot reach its gateway after the flood: %s", r)
	}
}
