package process

import (
	"bufio"
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/internal/testbin"
)

// BenchmarkStop measures Stop until every member of the tree is dead and
// reaped, against a floor of a bare SIGKILL to the process group plus wait on
// the same program started with os/exec.
func BenchmarkStop(b *testing.B) {
	bin := testbin.Path(b, "testharness")
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"cgroup", Options{Cgroup: ModeRequired}},
		{"pgroup+subreaper", Options{Cgroup: ModeOff}},
	} {
		s, err := NewSupervisor(mode.opts)
		if err != nil {
			b.Logf("skip %s: %v", mode.name, err)
			continue
		}
		run := func(name string, grace time.Duration, args ...string) {
			b.Run(mode.name+"/"+name, func(b *testing.B) {
				spec := Spec{Name: "agent", Path: bin, Args: append([]string{"agent"}, args...), Env: DefaultEnviron(nil)}
				for b.Loop() {
					b.StopTimer()
					p, err := s.Start(spec)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.WaitReady(context.Background(), isReady); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					p.Stop(context.Background(), grace)
				}
				if grace < time.Second {
					b.ReportMetric(float64(b.Elapsed()/time.Duration(b.N)-grace)/1e6, "ms-over-grace/op")
				}
			})
		}
		run("well-behaved", 5*time.Second)
		run("ignores-term", 50*time.Millisecond, "--ignore-term")
		s.Close(context.Background(), 0)
	}
	b.Run("floor/killpg+wait", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			cmd := exec.Command(bin, "agent")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, _ := cmd.StdoutPipe()
			cmd.Start()
			bufio.NewReader(out).ReadString('\n')
			b.StartTimer()
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
	})
}

// BenchmarkStartReady measures Start+WaitReady against a bare exec until the
// first stdout line.
func BenchmarkStartReady(b *testing.B) {
	bin := testbin.Path(b, "testharness")
	s, err := NewSupervisor(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background(), 0)
	b.Run("supervised", func(b *testing.B) {
		spec := Spec{Name: "agent", Path: bin, Args: []string{"agent"}, Env: DefaultEnviron(nil)}
		for b.Loop() {
			p, err := s.Start(spec)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.WaitReady(context.Background(), isReady); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			p.Stop(context.Background(), 0)
			b.StartTimer()
		}
	})
	b.Run("floor/exec", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(bin, "agent")
			out, _ := cmd.StdoutPipe()
			cmd.Start()
			bufio.NewReader(out).ReadString('\n')
			b.StopTimer()
			cmd.Process.Kill()
			cmd.Wait()
			b.StartTimer()
		}
	})
}

// startLineWriter starts a child writing one 100-byte line as fast as it
// can (yes), stopped at the benchmark's end.
func startLineWriter(b *testing.B) *Process {
	s, err := NewSupervisor(Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(context.Background(), 0) })
	p, err := s.Start(Spec{Name: "yes", Path: "yes", Args: []string{`{"type":"text_output","data":{"text":"a line of a typical turn, about a hundred bytes long"}}`}, Env: DefaultEnviron(nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Stop(context.Background(), 0) })
	return p
}

// BenchmarkReadLine: the cost of one stdout line through ReadLine (Line.Text
// a fresh copy), from a child that writes them as fast as it can.
func BenchmarkReadLine(b *testing.B) {
	p := startLineWriter(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.ReadLine(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLines: the same line through Lines' goroutine and channel (what
// the stream-json and ACP adapters read with before they moved to
// ReadLine), the comparison for BenchmarkReadLine.
func BenchmarkLines(b *testing.B) {
	lines := startLineWriter(b).Lines()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, ok := <-lines; !ok {
			b.Fatal("stdout closed")
		}
	}
}
