package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"github.com/harnessd/harnessd/internal/testbin"
)

var everyCommand = []string{"serve", "run", "chat", "agents", "check", "health", "version", "validate"}

// Every command prints its help to stdout and exits 0 for -h and --help.
func TestHelpGoesToStdoutWithExitZero(t *testing.T) {
	for _, cmd := range everyCommand {
		for _, h := range []string{"-h", "--help"} {
			out, errOut, code := harnessd(t, nil, cmd, h)
			if code != exitOK || errOut != "" {
				t.Errorf("%s %s: exit %d, stderr %q; want 0 and nothing", cmd, h, code, errOut)
			}
			if !strings.HasPrefix(out, "Usage:\n  harnessd "+cmd) {
				t.Errorf("%s %s: stdout does not start with the usage: %q", cmd, h, out)
			}
		}
	}
	out, _, code := harnessd(t, nil, "help", "serve")
	if code != exitOK || !strings.Contains(out, "--listen address") {
		t.Errorf("help serve: exit %d, stdout %q", code, out)
	}
	// help for a command there is not is a usage error, as the command is
	// (it printed the general help and exited 0).
	out, errOut, code := harnessd(t, nil, "help", "nope")
	if code != exitUsage || out != "" || !strings.Contains(errOut, `unknown command "nope"`) {
		t.Errorf("help nope: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// An unknown flag is one line naming the command and the flag, a hint, and
// exit 2, for every command.
func TestUnknownFlagIsOneLineAndExitTwo(t *testing.T) {
	for _, cmd := range everyCommand {
		out, errOut, code := harnessd(t, nil, cmd, "--bogus")
		want := "harnessd " + cmd + ": unknown flag: --bogus\nRun 'harnessd " + cmd + " --help' for usage.\n"
		if code != exitUsage || errOut != want || out != "" {
			t.Errorf("%s --bogus: exit %d, stdout %q, stderr %q; want 2 and %q", cmd, code, out, errOut, want)
		}
	}
}

// Durations and sizes carry their type in the help; the Go-flag spelling
// of the old help (-listen string) is gone.
func TestHelpTypesDurationsAndSizes(t *testing.T) {
	out, _, _ := harnessd(t, nil, "serve", "--help")
	for _, w := range []string{"--turn-timeout duration", "--startup-timeout duration", "--drain-timeout duration",
		"--idle-timeout duration", "--output-limit size", "--max-frame-bytes size", "--listen address", "--tool SPEC"} {
		if !strings.Contains(out, w) {
			t.Errorf("serve --help lacks %q", w)
		}
	}
	if strings.Contains(out, "  -listen") {
		t.Error("serve --help still shows Go-flag style single-dash flags")
	}
	out, _, _ = harnessd(t, nil, "health", "--help")
	if !strings.Contains(out, "--timeout duration") {
		t.Errorf("health --help lacks --timeout duration:\n%s", out)
	}
}

// A bad value is a one-line usage error naming the flag.
func TestBadFlagValue(t *testing.T) {
	_, errOut, code := harnessd(t, nil, "serve", "--turn-timeout", "soon", "--", "true")
	if code != exitUsage || !strings.HasPrefix(errOut, `harnessd serve: invalid argument "soon" for "--turn-timeout" flag`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = harnessd(t, nil, "serve", "--output-limit", "lots", "--", "true")
	if code != exitUsage || !strings.Contains(errOut, `"--output-limit"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	// Words from a fixed set are checked as the flags are read: --isolation
	// and --cgroup exited 3 ("a mechanism is missing") after the daemon's
	// setup had begun, --drain-policy once it had logged.
	for _, c := range [][2]string{{"--isolation", "vm"}, {"--cgroup", "maybe"}, {"--subreaper", "yes"}, {"--drain-policy", "nope"}} {
		_, errOut, code = harnessd(t, nil, "serve", c[0], c[1], "--", "true")
		want := `harnessd serve: invalid argument "` + c[1] + `" for "` + c[0] + `" flag: want `
		if code != exitUsage || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "--help") {
			t.Errorf("%s %s: exit %d, stderr %q", c[0], c[1], code, errOut)
		}
	}
}

// A flag's value written with a space ("10 minutes") leaves a word before
// "--": a usage error naming it, where serve and run took "minutes" as the
// harness program and blamed the harness command. Words only before "--"
// (no "--" at all) are still the harness command.
func TestWordsBeforeAndAfterDashAreAUsageError(t *testing.T) {
	for _, cmd := range []string{"serve", "run", "check"} {
		_, errOut, code := harnessd(t, nil, cmd, "--turn-timeout", "10", "minutes", "--", "./h")
		if cmd == "check" { // its flags are interspersed: pflag takes the "--"
			_, errOut, code = harnessd(t, nil, cmd, "--adapter", "jsonl", "minutes", "--", "./h")
		}
		want := "harnessd " + cmd + `: unexpected argument "minutes" before "--"`
		if code != exitUsage || !strings.HasPrefix(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", cmd, code, errOut, want)
		}
	}
	// The controls: without "--" the words name the program, as before;
	// a program's own "--" is its argument.
	_, errOut, code := harnessd(t, nil, "run", "--turn-timeout", "10", "no-such-program-here")
	if !strings.Contains(errOut, `program "no-such-program-here" not found`) {
		t.Errorf("without --: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = harnessd(t, nil, "run", "--turn-timeout", "10", "--", "no-such-program-here", "--", "x")
	if !strings.Contains(errOut, `program "no-such-program-here" not found`) {
		t.Errorf("a program's own --: exit %d, stderr %q", code, errOut)
	}
}

func TestGoStyleFlags(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("listen", "", "")
	fs.Bool("json", false, "")
	fs.StringP("message", "m", "", "")
	for _, c := range []struct{ in, want string }{
		{"-listen :0 -json", "--listen :0 --json"},
		{"-listen=:0", "--listen=:0"},
		{"--listen -json", "--listen -json"},      // -json is --listen's value
		{"-m -listen -json", "-m -listen --json"}, // -listen is -m's value
		{"-unknown -x", "-unknown -x"},            // left for pflag to report
		{"-json -- -listen", "--json -- -listen"}, // nothing after --
		{"--message=-listen -json", "--message=-listen --json"},
	} {
		if got := strings.Join(goStyleFlags(fs, strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

// The single-dash spelling of Go's flag package still works.
func TestSingleDashLongFlagsStillWork(t *testing.T) {
	out, errOut, code := harnessd(t, nil, "version", "-json")
	if code != exitOK || !strings.Contains(out, `"go_version"`) {
		t.Errorf("version -json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// --max-sessions below 1 is a usage error naming the flag: the server took
// 0 or a negative count as its default of 1 and served one session. (The
// listen address has no port, so a serve that accepted the count would
// fail there, naming --listen, rather than serve on.)
func TestMaxSessionsBelowOneIsAUsageError(t *testing.T) {
	for _, n := range []string{"0", "-4"} {
		out, errOut, code := harnessd(t, nil, "serve", "--max-sessions", n, "--listen", "127.0.0.1", "--", "true")
		want := "harnessd serve: --max-sessions " + n + ": want at least 1"
		if code != exitUsage || !strings.HasPrefix(errOut, want) || out != "" {
			t.Errorf("--max-sessions %s: exit %d, stdout %q, stderr %q; want 2 and %q", n, code, out, errOut, want)
		}
	}
}

// A listen address in use is an error naming --listen and what to do:
// it was net.Listen's own "listen tcp ADDR: bind: address already in use".
func TestListenAddressInUseNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, errOut, code := harnessd(t, nil, "serve", "--listen", addr, "--log-level", "error", "--", "true")
	want := "harnessd serve: --listen " + addr + ": the address is in use"
	if code != exitFailure || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--listen 127.0.0.1:0 with --addr-file") {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
	_, errOut, code = harnessd(t, nil, "serve", "--listen", "127.0.0.1", "--log-level", "error", "--", "true")
	if code != exitFailure || !strings.Contains(errOut, "harnessd serve: --listen 127.0.0.1: listen tcp: address 127.0.0.1: missing port") {
		t.Errorf("no port: exit %d, stderr %q", code, errOut)
	}
}

// A configuration file that is not there, and a log level that is not
// one, name their flag and, for the level, the levels: they were "open
// nope.yaml: no such file or directory" and `invalid --log-level "verbose"`.
func TestMissingConfigAndBadLogLevelNameTheFlag(t *testing.T) {
	for _, cmd := range []string{"serve", "run"} {
		_, errOut, code := harnessd(t, nil, cmd, "--config", "/nonexistent/env.yaml")
		want := "harnessd " + cmd + ": --config: stat /nonexistent/env.yaml: no such file or directory\n"
		if code != exitUsage || errOut != want {
			t.Errorf("%s --config: exit %d, stderr %q; want 2 and %q", cmd, code, errOut, want)
		}
		_, errOut, code = harnessd(t, nil, cmd, "--log-level", "verbose", "--", "true")
		want = "harnessd " + cmd + `: invalid --log-level "verbose" (debug, info, warn or error)` + "\n"
		if code != exitUsage || errOut != want {
			t.Errorf("%s --log-level: exit %d, stderr %q; want 2 and %q", cmd, code, errOut, want)
		}
	}
}

// An adapter that is not one names its knob and the protocols, not the
// presets' wrapping adapters: it was `unknown adapter "json" (known: [acp
// agent:claude-acp agent:claude-code ... pty])`, and validate printed
// options problems as "harness: harness.options: ...".
func TestUnknownAdapterNamesTheKnobAndTheProtocols(t *testing.T) {
	want := `harness.adapter (--adapter) "json" is not a harness protocol: want acp, claude, exec, jsonl, pty; an agent preset is harness.agent (--agent)`
	_, errOut, code := harnessd(t, nil, "run", "--adapter", "json", "-m", "x", "--", "true")
	if code != exitUsage || !strings.HasPrefix(errOut, "harnessd run: "+want) || strings.Contains(errOut, "agent:") {
		t.Errorf("run: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "env.yaml", "harness:\n  command: [true]\n  adapter: json\n")
	_, errOut, code = harnessd(t, nil, "validate", cfg)
	if code != exitUsage || !strings.HasPrefix(errOut, cfg+": "+want) {
		t.Errorf("validate: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
	cfg = writeConfig(t, dir, "opts.yaml", "harness:\n  command: [true]\n  options: {fork_timout: 5s}\n")
	_, errOut, _ = harnessd(t, nil, "validate", cfg)
	if !strings.HasPrefix(errOut, cfg+`: harness.options: unknown key "fork_timout"`) {
		t.Errorf("validate options: stderr %q", errOut)
	}
}

// HARNESSD_API_TOKEN set to nothing but spaces (or to nothing) is a usage
// error of serve, as an empty --api-token-file is: it served without
// authentication, logging "auth":false and no warning. The control: the
// variable set to a token serves with authentication ("auth":true).
func TestAnEmptyAPITokenVariableIsRefused(t *testing.T) {
	for _, v := range []string{"", " \t"} {
		serving, errOut, code := serveWithToken(t, v)
		if serving != "" || code != exitUsage || !strings.Contains(errOut, "HARNESSD_API_TOKEN is set but empty") {
			t.Errorf("HARNESSD_API_TOKEN=%q: exit %d, stderr %q, served: %s", v, code, errOut, serving)
		}
	}
	if serving, errOut, _ := serveWithToken(t, "s3cret"); !strings.Contains(serving, `"auth":true`) {
		t.Errorf("control: a token in HARNESSD_API_TOKEN: served %q, stderr %q", serving, errOut)
	}
}

// serveWithToken starts serve with HARNESSD_API_TOKEN=token and returns
// its "serving" log line (then stops it), or, when it exits first, its
// stderr and exit status.
func serveWithToken(t *testing.T, token string) (serving, errOut string, code int) {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "harnessd"), "serve", "--listen", "127.0.0.1:0", "--isolation", "process", "--log-format", "json", "--", "true")
	cmd.Env = append(os.Environ(), "HARNESSD_API_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if line := lines.Text(); strings.Contains(line, `"msg":"serving"`) {
			cmd.Process.Signal(syscall.SIGTERM)
			io.Copy(io.Discard, stderr)
			cmd.Wait()
			return line, out.String(), 0
		}
		out.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return "", out.String(), code
}

// A bad mode names where it came from: $OPENENV_MODE was blamed on the
// configuration file ("env.yaml: mode: ..."), which had no mode: key, and
// serve's message named neither.
func TestABadModeNamesItsSource(t *testing.T) {
	_, errOut, code := harnessd(t, []string{"OPENENV_MODE=prod"}, "serve", "--isolation", "process", "--", "true")
	if code != exitUsage || !strings.Contains(errOut, `$OPENENV_MODE: invalid mode "prod"`) {
		t.Errorf("serve with OPENENV_MODE=prod: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = harnessd(t, nil, "serve", "--mode", "prod", "--isolation", "process", "--", "true")
	if code != exitUsage || !strings.Contains(errOut, `--mode: invalid mode "prod"`) {
		t.Errorf("serve --mode prod: exit %d, stderr %q", code, errOut)
	}
	_, errOut, _ = harnessd(t, []string{"OPENENV_MODE=prod"}, "validate", "../../demo/env.yaml")
	if !strings.Contains(errOut, `$OPENENV_MODE: mode must be`) {
		t.Errorf("validate with OPENENV_MODE=prod: stderr %q", errOut)
	}
}

// health takes host:port as chat does: it exited 2 ("first path segment
// in URL cannot contain colon"); now an address without a listener is
// unreachable, exit 1.
func TestHealthTakesAnAddressWithoutScheme(t *testing.T) {
	_, errOut, code := harnessd(t, nil, "health", "--url", "127.0.0.1:1", "--timeout", "2s")
	if code != exitFailure || strings.Contains(errOut, "first path segment") || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want 1 and the connection's error", code, errOut)
	}
}
