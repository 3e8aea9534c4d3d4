package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

func init() {
	register("user", "a simulated user program (user.command): JSON lines, N turns then done", runUser)
}

// userQuery is the part of the daemon's question the double reads.
type userQuery struct {
	Type     string  `json:"type"`
	Turn     int     `json:"turn"`
	Response *string `json:"response"`
	Task     *struct {
		ID          string `json:"id"`
		Instruction string `json:"instruction"`
	} `json:"task"`
}

// runUser plays the user of harnessd's user protocol: it reads one
// question per line on stdin and answers {"message": ...} for turns 1 to
// --turns, then {"done": true, "reason": ...}. With --expect it checks
// each turn's response and ends the episode, saying why, at the first that
// does not match. --crash-at, --garbage-at and --silent-at misbehave at
// that question (1-based) to exercise the daemon's failure handling.
func runUser(args []string) int {
	fs := flag.NewFlagSet("user", flag.ContinueOnError)
	turns := fs.Int("turns", 5, "turns to play before answering done")
	say := fs.String("say", "say turn %d", "the message of turn N (a format with one %d)")
	expect := fs.String("expect", "", "the response turn N must have (a format with one %d); a mismatch ends the episode")
	crashAt := fs.Int("crash-at", 0, "exit with code 3 instead of answering question N")
	garbageAt := fs.Int("garbage-at", 0, "answer question N with a line that is not JSON")
	silentAt := fs.Int("silent-at", 0, "never answer question N")
	report := fs.String("report", "", "answer the first question with done, the reason saying the uid and, for each comma-separated PATH, whether it can be read")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 64<<10), 16<<20)
	out := json.NewEncoder(os.Stdout)
	task := ""
	asked := 0
	for in.Scan() {
		var q userQuery
		if err := json.Unmarshal(in.Bytes(), &q); err != nil {
			fmt.Fprintf(os.Stderr, "testharness user: bad question %q: %v\n", in.Text(), err)
			return 1
		}
		asked++
		if *report != "" {
			reason := fmt.Sprintf("uid=%d", os.Getuid())
			for _, p := range strings.Split(*report, ",") {
				_, err := os.ReadFile(p)
				reason += fmt.Sprintf(" %s=%v", p, err == nil)
			}
			out.Encode(map[string]any{"done": true, "reason": reason})
			continue
		}
		switch asked {
		case *crashAt:
			fmt.Fprintln(os.Stderr, "testharness user: crashing with code 3")
			return 3
		case *garbageAt:
			fmt.Println("this is not an answer")
			continue
		case *silentAt:
			continue
		}
		if q.Task != nil {
			task = q.Task.ID
		}
		if *expect != "" && q.Response != nil {
			if want := fmt.Sprintf(*expect, q.Turn); strings.TrimSpace(*q.Response) != want {
				out.Encode(map[string]any{"done": true, "reason": fmt.Sprintf("turn %d answered %q, want %q", q.Turn, *q.Response, want)})
				continue
			}
		}
		if q.Turn >= *turns {
			reason := fmt.Sprintf("satisfied after %d turns", q.Turn)
			if task != "" {
				reason += " of task " + task
			}
			out.Encode(map[string]any{"done": true, "reason": reason})
			continue
		}
		out.Encode(map[string]any{"message": fmt.Sprintf(*say, q.Turn+1)})
	}
	return 0
}
