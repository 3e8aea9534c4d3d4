package process

import (
	"fmt"
	"net"
	"testing"
)

// BenchmarkPeerOf measures one peer lookup of a connection from this
// process (not a harness: the common case of a trainer's connection) by
// each mechanism.
func BenchmarkPeerOf(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	srv, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	s, err := NewSupervisor(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(b.Context(), 0)
	off, err := NewSupervisor(Options{Cgroup: ModeOff})
	if err != nil {
		b.Fatal(err)
	}
	defer off.Close(b.Context(), 0)
	for _, m := range []struct {
		name   string
		lookup func(l, r net.Addr) (Peer, error)
	}{{PeerCheckCgroup, s.PeerOf}, {PeerCheckAncestry, off.PeerOf}} {
		if m.name == PeerCheckCgroup && s.Mechanisms().PeerCheck != PeerCheckCgroup {
			continue
		}
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				if p, err := m.lookup(srv.LocalAddr(), srv.RemoteAddr()); err != nil || p.Harness {
					b.Fatal(fmt.Sprint(p, err))
				}
			}
			fmt.Printf("\nBENCH peer lookup %s %.1fµs per connection (a peer that is not a harness)\n", m.name, float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3)
		})
	}
}
