package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

const benchPayload = 1 << 20

// echoOnce writes benchPayload bytes to conn (reading from r, which may
// buffer conn) and reads them back.
func echoOnce(conn net.Conn, r io.Reader, payload, back []byte) error {
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Write(payload)
		errc <- err
	}()
	if _, err := io.ReadFull(r, back); err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	return <-errc
}

// BenchmarkTunnel compares one CONNECT through the proxy plus a 1 MiB echo
// with the same echo on a direct loopback connection. Each op dials (and,
// through the proxy, sends CONNECT and reads the 200), echoes 1 MiB and
// closes. "ratio" alternates the two and reports their medians and
// proxied / direct.
func BenchmarkTunnel(b *testing.B) {
	port := echoServer(b)
	tp := startProxy(b, Options{Policy: Policy{Allow: []string{"allowed.test:" + port}}})
	done := make(chan struct{})
	go func() { // the reports are not what is measured
		for {
			select {
			case <-tp.reports.ch:
			case <-done:
				return
			}
		}
	}()
	b.Cleanup(func() { close(done) })
	payload := make([]byte, benchPayload)
	for i := range payload {
		payload[i] = byte(i)
	}
	back := make([]byte, benchPayload)
	direct := func() error {
		conn, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			return err
		}
		defer conn.Close()
		return echoOnce(conn, conn, payload, back)
	}
	proxied := func() error {
		conn, err := net.Dial("tcp", tp.addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "CONNECT allowed.test:"+port+" HTTP/1.1\r\nHost: allowed.test:"+port+"\r\n\r\n"); err != nil {
			return err
		}
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("CONNECT: %s", resp.Status)
		}
		return echoOnce(conn, br, payload, back)
	}
	run := func(f func() error) func(*testing.B) {
		return func(b *testing.B) {
			b.SetBytes(benchPayload)
			for b.Loop() {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("direct", run(direct))
	b.Run("proxy", run(proxied))
	b.Run("ratio", func(b *testing.B) {
		var td, tp []time.Duration
		timed := func(f func() error, into *[]time.Duration) {
			t0 := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			*into = append(*into, time.Since(t0))
		}
		for b.Loop() {
			timed(direct, &td)
			timed(proxied, &tp)
		}
		md, mp := median(td), median(tp)
		b.ReportMetric(float64(md.Microseconds()), "direct-µs")
		b.ReportMetric(float64(mp.Microseconds()), "proxy-µs")
		b.ReportMetric(float64(mp)/float64(md), "ratio")
	})
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
