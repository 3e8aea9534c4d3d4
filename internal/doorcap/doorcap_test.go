package doorcap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary a child server (see runChild).
const childEnv = "DOORCAP_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// okHandler answers every request 200 "ok", keeping the connection alive.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })

// serve serves okHandler on ln until the test ends.
func serve(t testing.TB, ln net.Listener, idle time.Duration) {
	t.Helper()
	srv := &http.Server{Handler: okHandler, IdleTimeout: idle, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
}

// client is one raw keep-alive connection.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// get sends one keep-alive GET and returns the status and the refusal
// header; an error when the connection ended without an answer.
func (c *client) get() (int, string, error) {
	_ = c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.c, "GET / HTTP/1.1\r\nHost: door\r\n\r\n"); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Harnessd-Refused"), nil
}

// waitEOF waits (up to 5 s) for the server to end the connection,
// discarding what it still sends (a refusal's answer).
func (c *client) waitEOF(t testing.TB) {
	t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c.r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open after 5 s")
	}
}

// refusedOrClosed asserts the answer is a 503 naming why, or (the peer
// reset the connection with the answer unread) no answer at all.
func refusedOrClosed(t testing.TB, status int, got, why string, err error) {
	t.Helper()
	if err == nil && (status != http.StatusServiceUnavailable || got != why) {
		t.Fatalf("answer %d refused=%q, want 503 %s", status, got, why)
	}
}

// TestCap: a door capped at 4 serves 4 keep-alive connections; more are
// answered 503 and closed; a slot given back (the server closes an idle
// connection) serves the next one.
func TestCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewLimit(Bounds{MaxConns: 4}, "test", nil)
	serve(t, l.Listen(ln), 300*time.Millisecond)
	addr := ln.Addr().String()
	var held []*client
	for i := range 4 {
		c := dial(t, addr)
		if st, _, err := c.get(); err != nil || st != http.StatusOK {
			t.Fatalf("connection %d below the cap: %d %v", i, st, err)
		}
		held = append(held, c)
	}
	for i := range 8 {
		c := dial(t, addr)
		st, why, err := c.get()
		refusedOrClosed(t, st, why, ReasonCap, err)
		c.waitEOF(t)
		if i == 0 && err != nil {
			t.Logf("refused connection ended without its answer: %v", err)
		}
	}
	if s := l.Stats(); s.Open != 4 || s.RefusedCap != 8 || s.RefusedReserve != 0 {
		t.Fatalf("stats %+v, want 4 open, 8 refused at the cap", s)
	}
	// The idle timeout closes the held ones; their slots come back.
	for _, c := range held {
		c.waitEOF(t)
	}
	c := dial(t, addr)
	if st, _, err := c.get(); err != nil || st != http.StatusOK {
		t.Fatalf("after the idle ones closed: %d %v", st, err)
	}
}

// TestCloseGivesTheSlotBack: a connection the client closes frees its
// slot once the server notices.
func TestCloseGivesTheSlotBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewLimit(Bounds{MaxConns: 1}, "test", nil)
	dl := l.Listen(ln)
	defer dl.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		for {
			c, err := dl.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	c1 := dial(t, ln.Addr().String())
	s1 := <-accepted
	if l.Stats().Open != 1 {
		t.Fatalf("open %d, want 1", l.Stats().Open)
	}
	c2 := dial(t, ln.Addr().String()) // refused: the accept loop closes it
	c2.waitEOF(t)
	if s := l.Stats(); s.RefusedCap != 1 {
		t.Fatalf("stats %+v, want one refusal", s)
	}
	c1.c.Close()
	s1.Close()
	s1.Close() // idempotent: the slot is given back once
	if s := l.Stats(); s.Open != 0 {
		t.Fatalf("open %d after close, want 0", s.Open)
	}
	dial(t, ln.Addr().String())
	if s := <-accepted; s == nil {
		t.Fatal("no connection accepted after the slot came back")
	}
}

// TestWrapperKeepsHalfClose: a held connection still half-closes.
func TestWrapperKeepsHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dl := NewLimit(Bounds{}, "test", nil).Listen(ln)
	defer dl.Close()
	got := make(chan net.Conn, 1)
	go func() {
		c, _ := dl.Accept()
		got <- c
	}()
	c := dial(t, ln.Addr().String())
	s := <-got
	defer s.Close()
	cw, ok := s.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the wrapper has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	c.waitEOF(t)
}

// TestReserve: in a child whose RLIMIT_NOFILE is 128 (reserve 64), a
// flood of one door holds connections only below descriptor 64; every
// later one is refused (fd_reserve) and the child's other listener (its
// "/health") still answers. The control: the same flood against an
// unwrapped listener exhausts the child's descriptors and its other
// listener no longer answers.
func TestReserve(t *testing.T) {
	for _, mode := range []string{"reserve", "plain"} {
		t.Run(mode, func(t *testing.T) {
			door, health, pid := startChild(t, mode)
			var ok, refused int
			for range 200 {
				c, err := net.DialTimeout("tcp", door, 5*time.Second)
				if err != nil {
					t.Fatalf("dial the door: %v", err)
				}
				defer c.Close()
				cl := &client{c: c, r: bufio.NewReader(c)}
				if mode == "plain" {
					continue // no answer expected once descriptors run out
				}
				st, why, err := cl.get()
				switch {
				case err == nil && st == http.StatusOK:
					ok++
				default:
					refusedOrClosed(t, st, why, ReasonReserve, err)
					refused++
				}
			}
			if mode == "plain" {
				awaitExhausted(t, pid, childNOFILE)
			}
			hc := &http.Client{Timeout: time.Second}
			resp, err := hc.Get("http://" + health + "/health")
			if mode == "plain" {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("control: the child still answers with its descriptors exhausted (%s), so the test proves nothing", resp.Status)
				}
				t.Logf("control: /health with the descriptors exhausted: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("/health during the flood: %v", err)
			}
			resp.Body.Close()
			t.Logf("held %d, refused %d at the reserve", ok, refused)
			if ok < 20 || ok > 64 || refused < 200-64 {
				t.Fatalf("held %d refused %d: want 20..64 held below descriptor 64, the rest refused", ok, refused)
			}
		})
	}
}

// startChild starts the test binary as a child server in mode and returns
// its door's and its health listener's addresses.
func startChild(t *testing.T, mode string) (door, health string, pid int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		t.Fatalf("child said %q", line)
	}
	return f[0], f[1], cmd.Process.Pid
}

// childNOFILE is the child's RLIMIT_NOFILE.
const childNOFILE = 128

// awaitExhausted waits until process pid holds limit descriptors: the
// dials are queued by the kernel before the child has accepted them all.
func awaitExhausted(t *testing.T, pid, limit int) {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		fds, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(fds) >= limit {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("control: the child holds %d descriptors after the flood, not its limit %d", len(fds), limit)
		}
	}
}

// runChild: lower RLIMIT_NOFILE to 128, serve a door (wrapped unless mode
// is "plain", cap 1000 so that only the reserve bounds it) and a plain
// health listener, print both addresses, and exit when stdin ends. Mode
// "raise" instead checks RaiseNOFILE from a lowered soft limit.
func runChild(mode string) int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "raise" {
		low := unix.Rlimit{Cur: 100, Max: r.Max}
		if err := unix.Prlimit(0, unix.RLIMIT_NOFILE, &low, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		n, err := RaiseNOFILE()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(n.Was, n.Soft, n.Hard)
		return 0
	}
	lim := unix.Rlimit{Cur: childNOFILE, Max: childNOFILE}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "dial" {
		return childDial()
	}
	door, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	health, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var dl net.Listener = door
	if mode != "plain" {
		dl = NewLimit(Bounds{MaxConns: 1000}, "test", nil).Listen(door)
	}
	quiet := log.New(io.Discard, "", 0) // the control's accept errors
	go (&http.Server{Handler: okHandler, ErrorLog: quiet}).Serve(dl)
	go (&http.Server{Handler: okHandler, ErrorLog: quiet}).Serve(health)
	fmt.Println(door.Addr().String(), health.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestRaiseNOFILE: from a soft limit of 100, RaiseNOFILE reaches the hard
// limit (in a child: the test process's own limit stays).
func TestRaiseNOFILE(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=raise")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		t.Fatalf("child said %q", out)
	}
	was, _ := strconv.ParseUint(f[0], 10, 64)
	soft, _ := strconv.ParseUint(f[1], 10, 64)
	hard, _ := strconv.ParseUint(f[2], 10, 64)
	if was != 100 || soft != hard || hard <= 100 {
		t.Fatalf("was %d soft %d hard %d: want 100 raised to the hard limit", was, soft, hard)
	}
}

func TestReserveFor(t *testing.T) {
	for _, c := range []struct{ n, want uint64 }{{20, 20}, {128, 64}, {1024, 256}, {20000, 5000}, {1 << 20, 1 << 18}} {
		if got := ReserveFor(c.n); got != c.want {
			t.Errorf("ReserveFor(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// childDial: with descriptors up to 64 taken (RLIMIT_NOFILE 128, reserve
// 64), a guarded dial fails with ErrReserve and a plain one (the control)
// connects.
func childDial() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	var files []*os.File // kept: a collected one would close its descriptor
	defer func() { _ = len(files) }()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		files = append(files, f)
		if f.Fd() >= 64 {
			f.Close()
			break
		}
	}
	plain := (&net.Dialer{}).DialContext
	if _, err := GuardDial(plain)(context.Background(), "tcp", ln.Addr().String()); !errors.Is(err, ErrReserve) {
		fmt.Println("guarded dial in the reserve:", err)
		return 1
	}
	c, err := plain(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		fmt.Println("control: plain dial:", err)
		return 1
	}
	c.Close()
	fmt.Println("ok")
	return 0
}

// TestGuardDial: in a child whose descriptors below the reserve are all
// taken, a guarded dial is refused with ErrReserve and a plain one
// connects; with room below the reserve a guarded dial connects.
func TestGuardDial(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=dial")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("child: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := GuardDial((&net.Dialer{}).DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("guarded dial with room: %v", err)
	}
	c.Close()
}
