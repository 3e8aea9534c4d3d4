package doorcap

import (
	"net"
	"testing"
)

// BenchmarkAccept: one loopback connect, accept and close on a bare
// listener and on a door's (the cap's counter, the descriptor check's
// getrlimit and the wrapper): the door's cost per new connection.
func BenchmarkAccept(b *testing.B) {
	for _, name := range []string{"bare", "door"} {
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var l net.Listener = ln
			if name == "door" {
				l = NewLimit(Bounds{}, "bench", nil).Listen(ln)
			}
			defer l.Close()
			accepted := make(chan error)
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						close(accepted)
						return
					}
					c.Close()
					accepted <- nil
				}
			}()
			addr := ln.Addr().String()
			b.ResetTimer()
			for b.Loop() {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				<-accepted
				c.Close()
			}
		})
	}
}
