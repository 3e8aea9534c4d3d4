package doortest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Answer is a door's answer to a raw request.
type Answer struct {
	// Status is the answer's status; Refused its X-Harnessd-Refused; Body
	// its body (the first 64 KiB).
	Status  int
	Refused string
	Body    string
}

// Stalled is a set of connections each holding a request whose body stops
// one byte short (StallBodies).
type Stalled struct {
	conns   []net.Conn
	answers chan Answer
}

// StallBodies opens conns connections to addr at once and sends on each
// head (a request header declaring len(body) bytes) and all but the last
// byte of body, reading the door's answers meanwhile. It returns once
// every connection's sending has ended: the body sent short of its last
// byte, or the door answered (a refusal) and closed. The connections close
// when the test ends, or at Close.
func StallBodies(t testing.TB, addr, head string, body []byte, conns int) *Stalled {
	t.Helper()
	body = body[:len(body)-1]
	s := &Stalled{answers: make(chan Answer, conns)}
	t.Cleanup(s.Close)
	sent := make(chan struct{}, conns)
	for range conns {
		c, err := net.DialTimeout("tcp", addr, wait)
		if err != nil {
			t.Fatalf("dial the door %s: %v", addr, err)
		}
		s.conns = append(s.conns, c)
		go func() {
			if a, err := readAnswer(bufio.NewReader(c)); err == nil {
				s.answers <- a
			}
		}()
		go func() {
			defer func() { sent <- struct{}{} }()
			if _, err := io.WriteString(c, head); err == nil {
				c.Write(body) // fails once the door refused and closed
			}
		}()
	}
	for range conns {
		<-sent
	}
	return s
}

// Answers returns the answers received, waiting up to d for at least want.
func (s *Stalled) Answers(want int, d time.Duration) []Answer {
	var got []Answer
	timeout := time.After(d)
	for len(got) < want {
		select {
		case a := <-s.answers:
			got = append(got, a)
		case <-timeout:
			return got
		}
	}
	for {
		select {
		case a := <-s.answers:
			got = append(got, a)
		default:
			return got
		}
	}
}

// Close closes the connections, ending their requests.
func (s *Stalled) Close() {
	for _, c := range s.conns {
		c.Close()
	}
}

// Send sends the raw request head followed by body on a new connection to
// addr and returns the door's answer, read while the body is sent (so an
// answer the door gives before reading the whole body is not lost).
func Send(t testing.TB, addr, head string, body []byte) Answer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatalf("dial the door %s: %v", addr, err)
	}
	defer c.Close()
	go func() {
		if _, err := io.WriteString(c, head); err == nil {
			c.Write(body)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(6 * wait))
	a, err := readAnswer(bufio.NewReader(c))
	if err != nil {
		t.Fatalf("the door's answer: %v", err)
	}
	return a
}

// readAnswer reads one answer from r.
func readAnswer(r *bufio.Reader) (Answer, error) {
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return Answer{Status: resp.StatusCode, Refused: resp.Header.Get("X-Harnessd-Refused"), Body: string(b)}, nil
}
