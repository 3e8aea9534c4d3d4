package tasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/harnessd/harnessd/egress"
)

// FailureGraderNeedsNetwork is Result.ErrorType for tests that install
// their tools at grading time (apt-get, pip install, curl … | sh, uv …)
// and could not reach the network: the reward is withheld (nil), as the
// tests' 0 would be a verdict on the machine, not on the agent. It is
// wire.FailureGraderNeedsNetwork.
const FailureGraderNeedsNetwork = "grader_needs_network"

// installCommand matches a line of a test script that fetches software:
// package managers that install, installers piped into a shell, uv/uvx
// (which resolve packages from an index), and downloads.
var installCommand = regexp.MustCompile(`(?i)(^|[\s;&|(])(` +
	`apt(-get)?\s+(-\S+\s+)*(install|update)\b|` +
	`apk\s+(-\S+\s+)*add\b|` +
	`(dnf|yum|microdnf)\s+(-\S+\s+)*install\b|` +
	`(pip3?|python3?\s+-m\s+pip)\s+(-\S+\s+)*install\b|` +
	`uv\s+(pip\s+install|add|sync|run|tool\s+install)\b|` +
	`uvx\b|` +
	`(npm|pnpm|yarn)\s+(-\S+\s+)*(install|add|i)\b|npx\b|` +
	`(curl|wget)\b[^|#]*\|\s*(ba|z|da)?sh\b|` +
	`(curl|wget)\s+\S*\s*https?://` +
	`)`)

// networkFailures match what a fetch prints when the network is not
// there (or the egress proxy refused the host), most telling first.
var networkFailures = []*regexp.Regexp{
	regexp.MustCompile(`(?i)could not resolve host[^\n]*|temporary failure (in name resolution|resolving)[^\n]*|name or service not known|dns error[^\n]*`),
	regexp.MustCompile(`(?i)connect tunnel failed[^\n]*|proxy ?error[^\n]*|403 forbidden|returned error: 40[37]`),
	regexp.MustCompile(`(?i)network is unreachable|failed to establish a new connection|connection refused|error sending request[^\n]*`),
	regexp.MustCompile(`(?i)failed to fetch[^\n]*|unable to locate package[^\n]*|unable to fetch some archives|no matching distribution found[^\n]*|could not find a version that satisfies[^\n]*|failed to (download|fetch|resolve)[^\n]*`),
	regexp.MustCompile(`(?i)could not open lock file[^\n]*|are you root\?|read-only file system`),
	regexp.MustCompile(`(?i)(uv|uvx|pytest|pip|npm|npx): (command )?not found`),
}

// networkFailure is the most telling fetch failure in out ("" for none).
func networkFailure(out string) string {
	for _, re := range networkFailures {
		if m := re.FindString(out); m != "" {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// checkNetwork marks a result whose tests needed the network: the tests'
// own script (test.sh in testsDir) has an install command, the reward is
// below 1 or missing, and the tests' output shows a fetch that failed. The
// reward is then withheld and ErrorType/Error name the command.
func (t *Task) checkNetwork(testsDir string, res *Result, proxied bool) {
	if res.Reward != nil && *res.Reward >= 1 || len(res.Tampered) > 0 {
		return
	}
	var script string
	if t.grader == nil {
		script = filepath.Join(testsDir, "test.sh")
	}
	cmds := installLines(script, t.grader)
	if len(cmds) == 0 {
		return
	}
	sign := networkFailure(res.Stdout + "\n" + res.Stderr)
	if sign == "" {
		return
	}
	var where []string
	for i, c := range cmds {
		if i == 3 {
			where = append(where, fmt.Sprintf("and %d more", len(cmds)-3))
			break
		}
		if c.line > 0 {
			where = append(where, fmt.Sprintf("test.sh line %d: `%s`", c.line, c.cmd))
		} else {
			where = append(where, fmt.Sprintf("the grader: `%s`", c.cmd))
		}
	}
	how := "the grading sandbox has no network"
	if proxied {
		how = "the egress proxy did not reach every host it needs (the environment's network.allow)"
	}
	res.ErrorType = FailureGraderNeedsNetwork
	res.Reward, res.Scores = nil, nil
	res.Error = strings.TrimPrefix(res.Error+"; ", "; ") + fmt.Sprintf("the tests install their tools at grading time and could not (%q): %s; %s", sign, strings.Join(where, ", "), how)
}

// installCmd is one install command of a test script.
type installCmd struct {
	cmd  string
	line int // 1-based; 0 for a JSONL grader
}

// installLines finds every install command of script (or of the JSONL
// grader's argv).
func installLines(script string, grader []string) []installCmd {
	if script == "" {
		if s := strings.Join(grader, " "); installCommand.MatchString(s) {
			return []installCmd{{cmd: s}}
		}
		return nil
	}
	f, err := os.Open(script)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []installCmd
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(l, "#") && installCommand.MatchString(l) {
			out = append(out, installCmd{cmd: l, line: n})
		}
	}
	return out
}

// installLine is the first install command of script (or of the JSONL
// grader's argv) and its 1-based line.
func installLine(script string, grader []string) (string, int) {
	if cs := installLines(script, grader); len(cs) > 0 {
		return cs[0].cmd, cs[0].line
	}
	return "", 0
}

// NeedsNetwork lists the task's test scripts' install commands (a static
// look at tests/test.sh and each step's): what `harnessd validate` warns
// about for a grader without network.
func (t *Task) NeedsNetwork() []string {
	var out []string
	dirs := []string{t.testsDir}
	for _, s := range t.Steps {
		dirs = append(dirs, s.testsDir)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if cmd, line := installLine(filepath.Join(d, "test.sh"), nil); cmd != "" {
			rel, _ := filepath.Rel(filepath.Dir(t.Source), filepath.Join(d, "test.sh"))
			out = append(out, fmt.Sprintf("%s line %d: %s", rel, line, cmd))
		}
	}
	if t.grader != nil {
		if cmd, _ := installLine("", t.grader); cmd != "" {
			out = append(out, "grader: "+cmd)
		}
	}
	return out
}

// serveEgress serves an egress proxy on the grading sandbox's door ln:
// the environment's policy (o.Policy), narrowed to the task's verifier
// allowlist when it has one (a host must pass both). It returns a stop
// function and the address the grader's HTTP(S)_PROXY names.
func serveEgress(ln *net.TCPListener, o egress.Options, n Network) (func(), string, error) {
	if ln == nil {
		return nil, "", errors.New("the sandbox has no egress door")
	}
	if n.Mode == NetworkAllowlist {
		pats, err := o.Policy.Patterns()
		if err != nil {
			return nil, "", err
		}
		var keep []string
		for _, p := range pats {
			for _, h := range n.Hosts {
				w := strings.HasPrefix(h, "*.")
				if strings.TrimPrefix(h, "*.") == p.Host && w == p.Wildcard || !w && p.Wildcard && strings.HasSuffix(h, "."+p.Host) {
					keep = append(keep, (egress.Pattern{Host: h, Port: p.Port}).String())
				}
			}
		}
		o.Policy = egress.Policy{Allow: keep}
	}
	p, err := egress.New(o)
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	if err := p.Serve(ln); err != nil {
		ln.Close()
		return nil, "", err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Close(ctx)
	}
	return stop, ln.Addr().String(), nil
}

// GradingNetworkNote says, for a task whose tests install tools at
// grading time (NeedsNetwork), the first such command and what its grader
// will have: the egress proxy (proxy: the environment's network.egress is
// allow, with the hosts allow) where the task's verifier policy lets it,
// else nothing. "" for a task whose tests install nothing.
func (t *Task) GradingNetworkNote(proxy bool, allow []string) string {
	cmds := t.NeedsNetwork()
	if len(cmds) == 0 {
		return ""
	}
	how := "the grading sandbox has no network: preinstall the tools, or allow their hosts (network.egress: allow, network.allow), or the task ends as grader_needs_network"
	switch {
	case proxy && t.VerifierNetwork.Allows():
		how = "its grader gets the egress proxy (network.allow: " + strings.Join(allow, ", ") + ")"
	case proxy:
		how = "its [verifier] network policy is no-network: no egress proxy; preinstall the tools, or the task ends as grader_needs_network"
	}
	return fmt.Sprintf("the tests install tools at grading time (%s): %s", cmds[0], how)
}
