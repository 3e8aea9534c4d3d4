package sockdiag

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// timeWait is Census's name for TCP's TIME_WAIT count.
const timeWait = "TCP TIME_WAIT"

// A Counter counts the sockets of the network namespace it was opened in
// (Census). It keeps the two /proc files it reads open, so that a count
// costs two reads and no path walk through /proc (a kept sandbox's init
// counts at every recycle); a file opened in /proc/thread-self/net stays
// the namespace's of the thread that opened it.
type Counter struct {
	protocols, sockstat *os.File
	buf                 bytes.Buffer // what read reads into, kept between counts
}

// OpenCounter opens a Counter of the calling thread's network namespace.
func OpenCounter() (*Counter, error) {
	p, err := os.Open("/proc/thread-self/net/protocols")
	if err != nil {
		return nil, fmt.Errorf("count sockets: %w", err)
	}
	s, err := os.Open("/proc/thread-self/net/sockstat")
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("count sockets: %w", err)
	}
	return &Counter{protocols: p, sockstat: s}, nil
}

// Close closes the Counter's files.
func (k *Counter) Close() error {
	return errors.Join(k.protocols.Close(), k.sockstat.Close())
}

// Census counts the sockets of the calling thread's network namespace
// (a Counter's once).
func Census() (map[string]int, error) {
	c, err := OpenCounter()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Census()
}

// Census counts the sockets of k's namespace by protocol, the ones with
// none left out: each protocol's live sockets (/proc/net/protocols,
// "sockets": per namespace) and TCP's TIME_WAIT ones (/proc/net/sockstat,
// "tw"). Each read starts the file over, which the kernel generates
// again.
func (k *Counter) Census() (map[string]int, error) {
	out := map[string]int{}
	b, err := k.read(k.protocols)
	if err != nil {
		return nil, fmt.Errorf("count sockets: %w", err)
	}
	if err := countProtocols(string(b), out); err != nil {
		return nil, fmt.Errorf("count sockets: %w", err)
	}
	b, err = k.read(k.sockstat)
	if err != nil {
		return nil, fmt.Errorf("count sockets: %w", err)
	}
	if tw := timeWaits(string(b)); tw > 0 {
		out[timeWait] = tw
	}
	return out, nil
}

// maxTable bounds what read takes of one /proc table (a protocols table
// is a few KiB).
const maxTable = 1 << 20

// read reads f whole from its start into the Counter's buffer, which the
// result aliases until the next read.
func (k *Counter) read(f *os.File) ([]byte, error) {
	k.buf.Reset()
	if _, err := k.buf.ReadFrom(io.NewSectionReader(f, 0, maxTable+1)); err != nil {
		return nil, err
	}
	if k.buf.Len() > maxTable {
		return nil, fmt.Errorf("%s exceeds %d bytes", f.Name(), maxTable)
	}
	return k.buf.Bytes(), nil
}

// countProtocols adds the non-zero "sockets" counts of a
// /proc/net/protocols table to out.
func countProtocols(s string, out map[string]int) error {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "protocol") {
		return errors.New("no protocols table")
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 {
			return fmt.Errorf("bad protocols line %q", l)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("bad protocols line %q", l)
		}
		if n > 0 {
			out[f[0]] += n
		}
	}
	return nil
}

// timeWaits reads TCP's "tw" count of a sockstat table (0 when absent).
func timeWaits(s string) int {
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(line, "TCP:"); ok {
			f := strings.Fields(rest)
			for i := 0; i+1 < len(f); i += 2 {
				if f[i] == "tw" {
					n, _ := strconv.Atoi(f[i+1])
					return n
				}
			}
		}
	}
	return 0
}
