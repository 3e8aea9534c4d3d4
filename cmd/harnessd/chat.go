package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/wire"
)

func init() {
	register("chat", "talk to a running server: each line is a turn, events streamed", runChat)
}

func runChat(args []string) int {
	c := newCLI("chat", "harnessd chat [flags]\n\n"+
		"Each input line is one turn. Over /ws (simulation) the turn's events print when it ends; with\n"+
		"--harness (production servers) they stream live and Ctrl-C cancels the running turn.\n"+
		"Commands: /reset, /state, /quit.")
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
	token, err := apiToken(*tokenFile)
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
	reset := func() bool {
		obs, err := env.Reset(ctx, client.ResetOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "reset:", err)
			return false
		}
		pr.observation("reset", obs)
		return true
	}
	if !reset() {
		return exitFailure
	}
	for {
		line, ok := next()
		if !ok {
			return exitOK
		}
		switch strings.TrimSpace(line) {
		case "/quit", "/exit":
			return exitOK
		case "/reset":
			reset()
			continue
		case "/state":
			st, err := env.State(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, "state:", err)
				continue
			}
			fmt.Println(compact(st))
			continue
		}
		obs, err := env.Step(ctx, line)
		if err != nil {
			fmt.Fprintln(os.Stderr, "step:", err)
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
		fmt.Fprintln(os.Stderr, "harnessd chat:", withTokenHint(err, opts.Token))
		return exitFailure
	}
	defer h.Close()
	fmt.Printf("connected to %s (session %s)\n", h.Name(), h.SessionID())
	ints := make(chan os.Signal, 1)
	signal.Notify(ints, syscall.SIGINT)
	defer signal.Stop(ints)
	for {
		line, ok := next()
		if !ok {
			return exitOK
		}
		if t := strings.TrimSpace(line); t == "/quit" || t == "/exit" {
			return exitOK
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
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			var te *client.TurnError
			if errors.As(err, &te) || errors.Is(err, client.ErrClosed) {
				return exitFailure
			}
		}
	}
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
