package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AttackResult is what one attack reports: OK true means the attack
// SUCCEEDED (the boundary failed); Errno names the refusing error
// (ECONNREFUSED, ESRCH, EROFS, …) when one was seen; Detail says more
// (statuses, counts, what was read).
type AttackResult struct {
	Attack string `json:"attack"`
	OK     bool   `json:"ok"`
	Errno  string `json:"errno,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Count is how many of a repeated action succeeded (forkflood's
	// children, join-cgroup's writes).
	Count int `json:"count,omitempty"`
	// Pid is the pid (as seen by the attacker) of a process the attack
	// left running (escape's sleeper).
	Pid int `json:"pid,omitempty"`
}

// attackTimeout bounds one network attack.
const attackTimeout = 5 * time.Second

// attacks lists every attack by name; each gets its arguments split at
// spaces.
var attacks = map[string]func(ctx context.Context, args []string) AttackResult{
	"http-to":      attackHTTPTo,
	"read-file":    attackReadFile,
	"write-file":   attackWriteFile,
	"list-dir":     attackListDir,
	"proc-environ": func(ctx context.Context, a []string) AttackResult { return attackProcRead("environ", a) },
	"proc-cmdline": func(ctx context.Context, a []string) AttackResult { return attackProcRead("cmdline", a) },
	"proc-mem":     attackProcMem,
	"ptrace":       attackPtrace,
	"kill":         attackKill,
	"join-cgroup":  attackJoinCgroup,
	"mcp-list":     attackMCPList,
	"http-get":     attackHTTPGet,
	"forkflood":    attackForkFlood,
	"memhog":       attackMemHog,
	"escape":       attackEscape,
	"egress-flood": attackEgressFlood,
}

// AttackNames lists the attacks, for the README and errors.
func AttackNames() []string {
	out := make([]string, 0, len(attacks))
	for n := range attacks {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// RunAttack performs attack name with args and returns its outcome; an
// unknown name or missing argument is reported as a failed attack with
// errno EINVAL.
func RunAttack(ctx context.Context, name string, args []string) AttackResult {
	f, ok := attacks[name]
	if !ok {
		return AttackResult{Attack: name, Errno: "EINVAL", Detail: fmt.Sprintf("unknown attack %q (have %v)", name, AttackNames())}
	}
	r := f(ctx, args)
	r.Attack = name
	return r
}

// attackLine runs the "attack NAME ARGS" directive and returns its JSON
// line.
func attackLine(ctx context.Context, arg string) string {
	fields := strings.Fields(arg)
	if len(fields) == 0 {
		fields = []string{""}
	}
	b, _ := json.Marshal(RunAttack(ctx, fields[0], fields[1:]))
	return string(b)
}

// RunAttackCommand implements "testharness attack NAME [ARGS]": one attack,
// its JSON line on stdout (the http-to and escape attacks run it in a
// child with an empty environment).
func RunAttackCommand(args []string) int {
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "usage: testharness attack NAME [ARGS] (attacks: %v)\n", AttackNames())
		return 2
	}
	b, _ := json.Marshal(RunAttack(context.Background(), args[0], args[1:]))
	fmt.Println(string(b))
	return 0
}

// errnoOf names the errno inside err ("" when there is none).
func errnoOf(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		if n := unix.ErrnoName(en); n != "" {
			return n
		}
		return fmt.Sprintf("errno %d", int(en))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "ETIMEDOUT"
	}
	return ""
}

// failed is the result of an attack refused with err.
func failed(err error, detail string) AttackResult {
	if detail == "" {
		detail = err.Error()
	} else {
		detail += ": " + err.Error()
	}
	return AttackResult{Errno: errnoOf(err), Detail: detail}
}

func needArgs(args []string, n int, usage string) *AttackResult {
	if len(args) < n {
		return &AttackResult{Errno: "EINVAL", Detail: "usage: " + usage}
	}
	return nil
}

// inChild runs "testharness attack args…" in a child with an empty
// environment and returns the result it prints.
func inChild(ctx context.Context, setsid bool, args ...string) AttackResult {
	cmd := exec.CommandContext(ctx, selfPath(), append([]string{"attack"}, args...)...)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	out, err := cmd.Output()
	var r AttackResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		if err == nil {
			err = jerr
		}
		return failed(err, fmt.Sprintf("child %v printed %q", args, out))
	}
	return r
}

// attackHTTPTo: "http-to HOST:PORT" — from a child with an empty
// environment, POST /reset, POST /step and GET /state on the daemon's
// orchestration listener. OK when any answers 2xx.
func attackHTTPTo(ctx context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "http-to HOST:PORT"); r != nil {
		return *r
	}
	if len(os.Environ()) > 0 {
		return inChild(ctx, false, append([]string{"http-to"}, args...)...)
	}
	return httpTo(ctx, args[0])
}

func httpTo(ctx context.Context, addr string) AttackResult {
	c := &http.Client{Timeout: attackTimeout}
	reqs := []struct{ method, path, body string }{
		{"POST", "/reset", `{}`},
		{"POST", "/step", `{"action":{"message":"reply pwned"}}`},
		{"GET", "/state", ""},
	}
	var r AttackResult
	var parts []string
	for _, q := range reqs {
		// url.URL escapes an IPv6 zone ("%2" becomes "%25" in the URL).
		u := (&url.URL{Scheme: "http", Host: addr, Path: q.path}).String()
		req, err := http.NewRequestWithContext(ctx, q.method, u, strings.NewReader(q.body))
		if err != nil {
			return failed(err, "bad address")
		}
		if q.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			if r.Errno == "" {
				r.Errno = errnoOf(err)
			}
			parts = append(parts, fmt.Sprintf("%s %s: %v", q.method, q.path, err))
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		resp.Body.Close()
		parts = append(parts, fmt.Sprintf("%s %s: HTTP %d %s", q.method, q.path, resp.StatusCode, strings.TrimSpace(string(body))))
		if resp.StatusCode/100 == 2 {
			r.OK = true
		}
	}
	r.Detail = strings.Join(parts, "; ")
	return r
}

// attackHTTPGet: "http-get URL [TOKEN]" — GET URL (another session's model
// gateway), with TOKEN as bearer. OK when it answers 2xx.
func attackHTTPGet(ctx context.Context, args []string) AttackResult {
	if r := needArgs(args, 1, "http-get URL [TOKEN]"); r != nil {
		return *r
	}
	req, err := http.NewRequestWithContext(ctx, "GET", args[0], nil)
	if err != nil {
		return failed(err, "bad URL")
	}
	if len(args) > 1 {
		req.Header.Set("Authorization", "Bearer "+args[1])
	}
	resp, err := (&http.Client{Timeout: attackTimeout}).Do(req)
	if err != nil {
		return failed(err, "GET "+args[0])
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	return AttackResult{OK: resp.StatusCode/100 == 2, Detail: fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(body)))}
}

// attackMCPList: "mcp-list URL TOKEN" — tools/list on an MCP bridge
// (another session's). OK when the list arrives.
func attackMCPList(ctx context.Context, args []string) AttackResult {
	if r := needArgs(args, 2, "mcp-list URL TOKEN"); r != nil {
		return *r
	}
	ctx, cancel := context.WithTimeout(ctx, attackTimeout)
	defer cancel()
	m := &MCPTools{URL: args[0], Token: args[1]}
	defer m.Close()
	names, err := m.List(ctx)
	if err != nil {
		return failed(err, "tools/list")
	}
	return AttackResult{OK: true, Count: len(names), Detail: "tools: " + strings.Join(names, ", ")}
}
