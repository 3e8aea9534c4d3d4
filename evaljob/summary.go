package evaljob

import (
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/harnessd/harnessd/tasks"
)

// PassThreshold is the reward at or above which a trial passes, for
// pass@k.
const PassThreshold = 1.0

// Summary is summary.json: the job's figures per agent and task, and per
// agent over every task.
type Summary struct {
	// Trials counts the job's trials, Finished those with a result,
	// Unrewarded the finished ones without a reward (they could not run).
	Trials     int `json:"trials"`
	Finished   int `json:"finished"`
	Unrewarded int `json:"unrewarded"`
	// Attempts is the job's k.
	Attempts int `json:"attempts"`
	// Rows are one per agent and task, agents in the job's order, tasks in
	// load order.
	Rows []Row `json:"rows"`
	// Agents are one per agent: its figures over every task (pass@k the
	// mean over the tasks with at least k rewarded trials).
	Agents []Row `json:"agents"`
}

// Row is the figures of one agent at one task (Task empty: at all of
// them).
type Row struct {
	Agent string `json:"agent"`
	Task  string `json:"task,omitempty"`
	// Trials counts the finished trials, Rewarded those with a reward,
	// Passed those whose reward is at least PassThreshold.
	Trials   int `json:"trials"`
	Rewarded int `json:"rewarded"`
	Passed   int `json:"passed"`
	// MeanReward is the mean reward of the rewarded trials (nil without
	// any): a trial that could not run counts in ErrorTypes, not as 0.
	MeanReward *float64 `json:"mean_reward"`
	// PassAtK maps k (1 to the job's attempts, as text) to the unbiased
	// estimator 1 - C(n-c,k)/C(n,k) over the n rewarded trials of which c
	// passed; a k above n has no entry.
	PassAtK map[string]float64 `json:"pass_at_k"`
	// ErrorTypes counts the trials by error type (graded failures, such
	// as a turn timeout, among them).
	ErrorTypes map[string]int `json:"error_types,omitempty"`
	// DurationMS are the trials' durations: mean, least and greatest.
	DurationMS Durations `json:"duration_ms"`
	// Tokens sums the trials' model tokens.
	Tokens Tokens `json:"tokens"`
}

// Durations are a row's trial durations in milliseconds.
type Durations struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// PassAtK is the unbiased estimator of pass@k (Chen et al. 2021, as
// Harbor computes it) from n trials of which c passed: 1 - C(n-c,k)/C(n,k),
// the chance that k trials drawn from the n without replacement include a
// pass. It needs 1 ≤ k ≤ n.
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	// C(n-c,k)/C(n,k) = Π_{i=n-c+1..n} (1 - k/i), numerically stable.
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

// Summarize computes the summary of results (finished trials, in any
// order) of the job spec defines.
func Summarize(spec *Spec, results []*Result) *Summary {
	s := &Summary{Trials: len(spec.TaskIDs) * len(spec.Agents) * spec.Attempts, Finished: len(results), Attempts: spec.Attempts}
	by := map[[2]string][]*Result{}
	for _, r := range results {
		by[[2]string{r.Agent, r.Task}] = append(by[[2]string{r.Agent, r.Task}], r)
		if !r.Ran() {
			s.Unrewarded++
		}
	}
	for _, a := range spec.Agents {
		var all []*Result
		var rows []Row
		for _, id := range spec.TaskIDs {
			rs := by[[2]string{a.Name, id}]
			all = append(all, rs...)
			row := makeRow(a.Name, id, rs, spec.Attempts)
			rows = append(rows, row)
		}
		s.Rows = append(s.Rows, rows...)
		total := makeRow(a.Name, "", all, 0)
		total.PassAtK = meanPassAtK(rows, spec.Attempts)
		s.Agents = append(s.Agents, total)
	}
	return s
}

// makeRow computes a row from its trials; attempts bounds pass@k's k.
func makeRow(agent, task string, rs []*Result, attempts int) Row {
	row := Row{Agent: agent, Task: task, Trials: len(rs), PassAtK: map[string]float64{}}
	var rewards, durs []float64
	for _, r := range rs {
		durs = append(durs, r.DurationMS)
		if r.ErrorType != "" {
			if row.ErrorTypes == nil {
				row.ErrorTypes = map[string]int{}
			}
			row.ErrorTypes[r.ErrorType]++
		}
		if r.Tokens != nil {
			row.Tokens.Prompt += r.Tokens.Prompt
			row.Tokens.Completion += r.Tokens.Completion
		}
		if !r.Ran() {
			continue
		}
		row.Rewarded++
		rewards = append(rewards, *r.Reward)
		if *r.Reward >= PassThreshold {
			row.Passed++
		}
	}
	if row.Rewarded > 0 {
		m := tasks.FiniteMean(rewards)
		row.MeanReward = &m
	}
	for k := 1; k <= min(attempts, row.Rewarded); k++ {
		row.PassAtK[strconv.Itoa(k)] = PassAtK(row.Rewarded, row.Passed, k)
	}
	if len(durs) > 0 {
		row.DurationMS = Durations{Mean: tasks.FiniteMean(durs), Min: slices.Min(durs), Max: slices.Max(durs)}
	}
	return row
}

// meanPassAtK averages the rows' pass@k, each k over the rows that have
// it.
func meanPassAtK(rows []Row, attempts int) map[string]float64 {
	out := map[string]float64{}
	for k := 1; k <= attempts; k++ {
		key := strconv.Itoa(k)
		var xs []float64
		for _, r := range rows {
			if v, ok := r.PassAtK[key]; ok {
				xs = append(xs, v)
			}
		}
		if len(xs) > 0 {
			out[key] = tasks.FiniteMean(xs)
		}
	}
	return out
}

// sortedKeys are m's keys in order (error types in the table).
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// round3 rounds x to three decimals (the table's figures).
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
