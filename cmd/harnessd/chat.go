package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/internal/termtext"
	"github.com/harnessd/harnessd/wire"
)

func init() {
	register("chat", "talk to a running server: each line is a turn, events streamed", runChat)
}

func runChat(args []string) int {
	c := newCLI("chat", "harnessd chat [flags]\n\n"+
		"Each input line is one turn. Over /ws (simulation) the turn's events print when it ends; with\n"+
		"--harness (production servers) they stream live and Ctrl-C cancels the running turn.\n"+
		"Commands: /quit (or /exit), /help, and over /ws /reset and /state; a line starting // is sent with one / less.\n"+
		"Exits 1 when the server refused or failed any request\n"+
		"(a turn that ends the episode, e.g. a timeout, is an observation, not a failure).")
	fs := c.fs
	url := fs.String("url", "http://127.0.0.1:8000", "server `URL`")
	tokenFile := fs.String("api-token-file", "", "`file` holding the API token (or set HARNESSD_API_TOKEN)")
	streaming := fs.Bool("harness", false, "use the streaming /harness socket (production mode)")
	if code, done := c.parse(args); done {
		return code
	}
	if code, done := c.noArgs(); done {
		return code
	}
	token, err := apiToken(*tokenFile, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd chat:", err)
		return exitUsage
	}
	opts := &client.Options{Token: token}
	ctx := context.Background()
	pr := newPrinter(os.Stdout)
	next := messageSource(nil)
	if *streaming {
		return chatHarness(ctx, *url, opts, pr, next)
	}
	env, err := client.Dial(ctx, *url, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd chat:", withTokenHint(err, token))
		return exitFailure
	}
	defer env.Close()
	var tally requestTally
	reset := func() bool {
		obs, err := env.Reset(ctx, client.ResetOptions{})
		if !tally.ok("reset", err) {
			return false
		}
		pr.observation("reset", obs)
		return true
	}
	if !reset() {
		return tally.exitCode()
	}
	for {
		line, ok := next()
		if !ok {
			return tally.exitCode()
		}
		line, cmd := chatCommand(line, "/reset", "/state")
		switch cmd {
		case "":
		case "/quit", "/exit":
			return tally.exitCode()
		case "/reset":
			reset()
			continue
		case "/state":
			st, err := env.State(ctx)
			if tally.ok("state", err) {
				fmt.Println(termtext.Escape(compact(st))) // JSON leaves DEL and C1 as they are
			}
			continue
		default:
			continue // /help, or a word chatCommand answered
		}
		obs, err := env.Step(ctx, line)
		if !tally.ok("step", err) {
			if errors.Is(err, client.ErrClosed) {
				return exitFailure
			}
			continue
		}
		for _, e := range obs.Metadata.TurnEvents {
			pr.event(e)
		}
		pr.observation(fmt.Sprintf("turn %d", obs.Metadata.TurnNumber), obs)
		if obs.Done {
			fmt.Println("(episode over; /reset to start again)")
		}
	}
}

func chatHarness(ctx context.Context, url string, opts *client.Options, pr *printer, next func() (string, bool)) int {
	h, err := client.DialHarness(ctx, url, opts)
	if err != nil {
		var se *client.HTTPStatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			err = fmt.Errorf("%w (the server serves /harness in production mode only: chat without --harness speaks to a simulation server)", err)
		}
		fmt.Fprintln(os.Stderr, "harnessd chat:", withTokenHint(err, opts.Token))
		return exitFailure
	}
	defer h.Close()
	fmt.Printf("connected to %s (session %s)\n", h.Name(), h.SessionID())
	ints := make(chan os.Signal, 1)
	signal.Notify(ints, syscall.SIGINT)
	defer signal.Stop(ints)
	var tally requestTally
	for {
		line, ok := next()
		if !ok {
			return tally.exitCode()
		}
		line, cmd := chatCommand(line)
		switch cmd {
		case "":
		case "/quit", "/exit":
			return tally.exitCode()
		default:
			continue
		}
		turnDone := make(chan struct{})
		go func() {
			select {
			case <-ints:
				h.Cancel(ctx)
			case <-turnDone:
			}
		}()
		_, err := h.Send(ctx, line, func(e wire.Event) { pr.event(e) })
		close(turnDone)
		if !tally.ok("turn", err) {
			var te *client.TurnError
			if errors.As(err, &te) || errors.Is(err, client.ErrClosed) {
				return exitFailure
			}
		}
	}
}

// requestTally counts the requests of a chat the server refused or failed,
// so a scripted chat (lines piped in) exits non-zero when any of them did,
// as run does when its episode ends in an error. An episode the harness
// ended (a timeout, a crash) is an observation, not a failed request.
type requestTally struct {
	sent, failed int
}

// ok records one request's outcome, printing its error under what (reset,
// step, state), and says whether it succeeded.
func (t *requestTally) ok(what string, err error) bool {
	t.sent++
	if err == nil {
		return true
	}
	t.failed++
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	return false
}

// exitCode is chat's exit status at its end: exitFailure, with a count on
// stderr, when any request failed.
func (t *requestTally) exitCode() int {
	if t.failed == 0 {
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "harnessd chat: %d of %d requests failed\n", t.failed, t.sent)
	return exitFailure
}

// withTokenHint adds to a connection the server refused with 401 the knob
// that gives chat the API token (given is whether one was sent).
func withTokenHint(err error, token string) error {
	var se *client.HTTPStatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		return err
	}
	if token == "" {
		return fmt.Errorf("%w (the server wants an API token: --api-token-file FILE, or set HARNESSD_API_TOKEN)", err)
	}
	return fmt.Errorf("%w (the server refused the API token given: check --api-token-file or HARNESSD_API_TOKEN against the server's)", err)
}

// chatCommand reads an input line: a command of chat's own (/quit, /exit,
// /help and those of known) is returned as cmd, /help and an unknown
// /word answered here (cmd "/help"); any other line is a message (cmd "",
// and a line starting "//" is sent with one "/" less, to send a message
// that is a lone /word). A lone /word was sent to the harness as a turn.
func chatCommand(line string, known ...string) (msg, cmd string) {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "//") {
		return strings.Replace(line, "//", "/", 1), ""
	}
	if !strings.HasPrefix(t, "/") || strings.ContainsAny(t, " \t") || strings.Count(t, "/") > 1 {
		return line, "" // a path, a sentence
	}
	all := append([]string{"/quit", "/exit", "/help"}, known...)
	switch {
	case slices.Contains(all, t) && t != "/help":
		return line, t
	case t != "/help":
		fmt.Printf("unknown command %s; ", t)
	}
	fmt.Printf("commands: %s (a line starting // is sent with one / less)\n", strings.Join(all, ", "))
	return line, "/help"
}
