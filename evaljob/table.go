package evaljob

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints s as a table: a row per agent and task, then a row
// per agent over every task ("all"), with the mean reward, pass@k for each
// k up to the job's attempts, the error types, the mean trial duration and
// the tokens.
func WriteTable(w io.Writer, s *Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"AGENT", "TASK", "TRIALS", "MEAN"}
	for k := 1; k <= s.Attempts; k++ {
		head = append(head, "PASS@"+strconv.Itoa(k))
	}
	head = append(head, "ERRORS", "DURATION", "TOKENS")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, rows := range [][]Row{s.Rows, s.Agents} {
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(tableRow(r, s.Attempts), "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d trials finished, %d without a reward\n", s.Finished, s.Trials, s.Unrewarded)
	return err
}

// tableRow is one row's cells.
func tableRow(r Row, attempts int) []string {
	task := r.Task
	if task == "" {
		task = "all"
	}
	mean := "-"
	if r.MeanReward != nil {
		mean = strconv.FormatFloat(round3(*r.MeanReward), 'f', -1, 64)
	}
	cells := []string{r.Agent, task, fmt.Sprintf("%d/%d", r.Rewarded, r.Trials), mean}
	for k := 1; k <= attempts; k++ {
		if v, ok := r.PassAtK[strconv.Itoa(k)]; ok {
			cells = append(cells, strconv.FormatFloat(round3(v), 'f', -1, 64))
		} else {
			cells = append(cells, "-")
		}
	}
	var errs []string
	for _, k := range sortedKeys(r.ErrorTypes) {
		errs = append(errs, fmt.Sprintf("%s×%d", k, r.ErrorTypes[k]))
	}
	if len(errs) == 0 {
		errs = []string{"-"}
	}
	dur := "-"
	if r.Trials > 0 {
		dur = (time.Duration(r.DurationMS.Mean * float64(time.Millisecond))).Round(time.Millisecond).String()
	}
	tok := "-"
	if r.Tokens != (Tokens{}) {
		tok = fmt.Sprintf("%d/%d", r.Tokens.Prompt, r.Tokens.Completion)
	}
	return append(cells, strings.Join(errs, ","), dur, tok)
}

// ProgressLine renders p as one terminal line of at most width columns: a
// bar, the trials done and running, those without a reward, the mean
// reward so far and the time elapsed.
func ProgressLine(p Progress, now time.Time, width int) string {
	mean := "-"
	if n := p.Done - p.Unrewarded; n > 0 {
		mean = strconv.FormatFloat(round3(p.RewardSum/float64(n)), 'f', -1, 64)
	}
	tail := fmt.Sprintf(" %d/%d  running %d  unrewarded %d  mean %s  %s", p.Done, p.Total, p.Running, p.Unrewarded, mean,
		now.Sub(p.Started).Round(time.Second))
	bar := max(10, min(30, width-len(tail)-2))
	fill := 0
	if p.Total > 0 {
		fill = bar * p.Done / p.Total
	}
	line := "[" + strings.Repeat("#", fill) + strings.Repeat(".", bar-fill) + "]" + tail
	if width > 0 && len(line) > width {
		line = line[:width]
	}
	return line
}
