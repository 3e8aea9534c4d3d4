package rubric

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harnessd/harnessd/process"
)

// maxScorerOutput bounds what is read from a command scorer's stdout.
const maxScorerOutput = 1 << 20

// maxResponseEnv bounds HARNESSD_RESPONSE: one environment string may
// hold 128 KiB at most (MAX_ARG_STRLEN), and the harness's answer must
// never be able to make a scorer's start fail (E2BIG), which once left a
// penalty rubric out of the reward.
const maxResponseEnv = 64 << 10

// responseEnv is the scorer's HARNESSD_RESPONSE: the harness's response
// with each NUL byte (which no environment string can hold; the exec
// failed) as U+FFFD, cut to its first maxResponseEnv bytes on a character
// boundary, then with HARNESSD_RESPONSE_TRUNCATED=1 beside it. The whole
// response is the "response" of the JSON on the scorer's stdin.
func responseEnv(resp string) []string {
	resp = strings.ReplaceAll(resp, "\x00", "\uFFFD")
	if len(resp) <= maxResponseEnv {
		return []string{"HARNESSD_RESPONSE=" + resp}
	}
	cut := maxResponseEnv
	for cut > 0 && !utf8.RuneStart(resp[cut]) {
		cut--
	}
	return []string{"HARNESSD_RESPONSE=" + resp[:cut], "HARNESSD_RESPONSE_TRUNCATED=1"}
}

// sandboxStartTimeout bounds starting a scorer's sandbox (the caller's
// context too); the scorer's own timeout starts once it is up.
const sandboxStartTimeout = 30 * time.Second

func (s *Set) runCommand(ctx context.Context, sp *Spec, in Input) (float64, string, error) {
	if in.Sandbox == nil {
		return 0, "", ErrNoSandbox
	}
	sctx, cancel := context.WithTimeout(ctx, sandboxStartTimeout)
	sb, err := in.Sandbox(sctx, sp.Command)
	cancel()
	if err != nil {
		return 0, "", fmt.Errorf("sandbox for the scorer: %w", err)
	}
	defer sb.Close()
	ctx, cancel = context.WithTimeout(ctx, sp.Timeout.D())
	defer cancel()
	in.Workspace = sb.Workspace
	env := append(append([]string(nil), s.deps.Env...),
		"HARNESSD_WORKSPACE="+in.Workspace,
		"HARNESSD_EPISODE_ID="+in.EpisodeID,
		"HARNESSD_TURN="+strconv.Itoa(in.TurnNumber),
	)
	env = append(env, responseEnv(in.Response)...)
	p, err := s.deps.Supervisor.Start(process.Spec{
		Name:     "rubric:" + sp.Name,
		Path:     sp.Command[0],
		Args:     sp.Command[1:],
		Dir:      in.Workspace,
		Env:      env,
		Stdio:    process.StdioRaw,
		Launcher: sb.Launcher,
	})
	if err != nil {
		return 0, "", err
	}
	defer p.Stop(context.WithoutCancel(ctx), 0)

	payload, _ := json.Marshal(in)
	go func() {
		p.Write(ctx, payload)
		p.CloseStdin()
	}()
	outc := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(p.Stdout(), maxScorerOutput))
		outc <- b
	}()
	st, err := p.Wait(ctx)
	if err != nil {
		p.Stop(context.WithoutCancel(ctx), 0)
		return 0, tail(p.StderrTail()), fmt.Errorf("scorer timed out after %s", sp.Timeout)
	}
	var out []byte
	select {
	case out = <-outc:
	case <-time.After(time.Second): // a grandchild kept stdout open
		p.Stop(context.WithoutCancel(ctx), 0)
		out = <-outc
	}
	detail := tail(string(out))
	if st.Signaled() {
		return 0, detail, fmt.Errorf("scorer %s; stderr: %s", st, tail(p.StderrTail()))
	}
	if f, ok := lastNumber(out); ok {
		return f, detail, nil
	}
	if st.Code == 0 {
		return 1, detail, nil
	}
	return 0, detail, nil
}

// lastNumber finds the last line of out that is a number (or JSON with a score).
func lastNumber(out []byte) (float64, bool) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if f, ok := parseScore(string(lines[i])); ok {
			return f, true
		}
	}
	return 0, false
}

// tail keeps the last 512 bytes of s for reward details.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 512 {
		s = "…" + s[len(s)-512:]
	}
	return s
}
