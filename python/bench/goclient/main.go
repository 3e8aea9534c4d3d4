// Command goclient is the Go side of python/bench/bench_pool.py: it plays
// episodes through package client over the daemons it is given, as the
// Python pool does, and prints their rate as one JSON line.
//
// Each of -concurrency workers is pinned to daemon k mod N (so each daemon
// serves concurrency/N sessions at once) and takes the next episode until
// they run out: dial /ws, reset,
// one step per -message, fetch the training export over HTTP
// (GET /episodes/{id}/export; package client has no export call), close.
// It owns nothing but its own sessions.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harnessd/harnessd/client"
)

func main() {
	urls := flag.String("urls", "", "comma-separated daemon base URLs")
	episodes := flag.Int("episodes", 64, "episodes to play")
	concurrency := flag.Int("concurrency", 8, "episodes at once")
	messages := flag.String("messages", "llm what is 2+3|llm are you sure|reply 5", "the steps of an episode, |-separated")
	flag.Parse()
	if *urls == "" {
		fmt.Fprintln(os.Stderr, "goclient: -urls is required")
		os.Exit(2)
	}
	if err := run(strings.Split(*urls, ","), *episodes, *concurrency, strings.Split(*messages, "|")); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func run(urls []string, episodes, concurrency int, msgs []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, concurrency)
	start := time.Now()
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			url := urls[w%len(urls)]
			for {
				i := int(next.Add(1)) - 1
				if i >= episodes {
					return
				}
				if err := episode(ctx, url, fmt.Sprintf("go-%d", i), msgs); err != nil {
					errs <- fmt.Errorf("episode %d on %s: %w", i, url, err)
					cancel()
					return
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"client": "go", "episodes": episodes, "concurrency": concurrency, "daemons": len(urls),
		"seconds": elapsed.Seconds(), "episodes_per_second": float64(episodes) / elapsed.Seconds(),
		"capacity_retries": capacityRetries.Load(),
	})
}

// episode plays one episode on the daemon at url. A daemon that still
// counts the worker's previous session (its slot is freed after the close
// handshake) answers CAPACITY_REACHED: the worker tries again, as a
// trainer's loop would, and counts it.
func episode(ctx context.Context, url, id string, msgs []string) error {
	for {
		env, err := client.Dial(ctx, url, nil)
		if err != nil {
			return fmt.Errorf("dial: %w", err)
		}
		_, err = env.Reset(ctx, client.ResetOptions{EpisodeID: id})
		var se *client.ServerError
		if errors.As(err, &se) && se.Code == "CAPACITY_REACHED" {
			env.Close()
			capacityRetries.Add(1)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			env.Close()
			return fmt.Errorf("reset: %w", err)
		}
		err = play(ctx, env, url, id, msgs)
		env.Close()
		return err
	}
}

// capacityRetries counts resets refused with CAPACITY_REACHED.
var capacityRetries atomic.Int64

// play runs the episode's steps and fetches its export.
func play(ctx context.Context, env *client.Env, url, id string, msgs []string) error {
	for _, m := range msgs {
		obs, err := env.Step(ctx, m)
		if err != nil {
			return fmt.Errorf("step: %w", err)
		}
		if obs.Done {
			break
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/episodes/"+id+"/export", nil)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("export: HTTP %d: %s", resp.StatusCode, body)
	}
	var ex struct {
		Chains []json.RawMessage `json:"chains"`
	}
	if err := json.Unmarshal(body, &ex); err != nil || len(ex.Chains) == 0 {
		return fmt.Errorf("export without chains (%v): %.200s", err, body)
	}
	return nil
}
