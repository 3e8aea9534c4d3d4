package console

import (
	"math"
	"net/http"
	"sort"
)

// The overview API: GET /web/api/overview aggregates the episodes the
// episodes API would list under the same filters (its sort and page are
// ignored) into what the overview page charts: reward over time, pass rate
// per task, error types, turn and model-call latency, tokens per episode.

// Bounds and buckets of the overview.
const (
	maxRewardPoints = 2000 // latest rewarded episodes in the reward series
	maxTaskRows     = 50   // tasks with the most episodes
)

var (
	latencyBuckets = []float64{100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, math.Inf(1)} // ms
	tokenBuckets   = []float64{1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, math.Inf(1)}
)

// RewardPoint is one episode's reward at its start.
type RewardPoint struct {
	ID      string  `json:"id"`
	Started float64 `json:"started"`
	Reward  float64 `json:"reward"`
}

// TaskPass is how often a task's episodes passed (reward at least the
// pass mark) of those graded.
type TaskPass struct {
	Task     string  `json:"task"`
	Episodes int     `json:"episodes"`
	Graded   int     `json:"graded"`
	Passed   int     `json:"passed"`
	Rate     float64 `json:"rate"`
}

// Histogram counts values per bucket: Counts[i] those at most Le[i] (and
// above Le[i-1]); the last bound is null (no bound).
type Histogram struct {
	Le     []*float64 `json:"le"`
	Counts []int      `json:"counts"`
	N      int        `json:"n"`
	P50    float64    `json:"p50"`
	P95    float64    `json:"p95"`
}

func histogram(bounds []float64, vals []float64) Histogram {
	h := Histogram{Counts: make([]int, len(bounds)), N: len(vals)}
	for _, b := range bounds {
		if math.IsInf(b, 1) {
			h.Le = append(h.Le, nil)
		} else {
			v := b
			h.Le = append(h.Le, &v)
		}
	}
	for _, v := range vals {
		h.Counts[sort.SearchFloat64s(bounds, v)]++
	}
	if len(vals) > 0 {
		sort.Float64s(vals)
		h.P50 = vals[(len(vals)-1)/2]
		h.P95 = vals[int(math.Ceil(0.95*float64(len(vals))))-1]
	}
	return h
}

func (c *Console) handleWebOverview(w http.ResponseWriter, r *http.Request) {
	q, err := parseEpisodeQuery(r.URL.Query())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": err.Error()})
		return
	}
	pass := 1.0
	out := map[string]any{"pass_mark": pass}
	err = c.withLive(func(all []*indexEntry) {
		rewards := []RewardPoint{} // [] in JSON, never null: the page reads its length
		tasks := map[string]*TaskPass{}
		errs := map[string]int{}
		var turnMS, modelMS, tokens []float64
		n := 0
		for _, e := range all {
			if !q.match(e) {
				continue
			}
			n++
			s := &e.sum
			if s.Reward != nil {
				rewards = append(rewards, RewardPoint{s.ID, s.Started, *s.Reward})
			}
			t := tasks[s.Task]
			if t == nil {
				t = &TaskPass{Task: s.Task}
				tasks[s.Task] = t
			}
			t.Episodes++
			if s.Reward != nil {
				t.Graded++
				if *s.Reward >= pass {
					t.Passed++
				}
			}
			et := s.ErrorType
			if et == "" {
				et = errorTypeNone
			}
			errs[et]++
			turnMS = append(turnMS, e.turnMS...)
			modelMS = append(modelMS, e.modelMS...)
			if s.Tokens > 0 {
				tokens = append(tokens, float64(s.Tokens))
			}
		}
		sort.Slice(rewards, func(i, j int) bool {
			if rewards[i].Started != rewards[j].Started {
				return rewards[i].Started < rewards[j].Started
			}
			return rewards[i].ID < rewards[j].ID
		})
		rewards = rewards[max(0, len(rewards)-maxRewardPoints):]
		rows := make([]TaskPass, 0, len(tasks))
		for _, t := range tasks {
			if t.Graded > 0 {
				t.Rate = float64(t.Passed) / float64(t.Graded)
			}
			rows = append(rows, *t)
		}
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].Episodes != rows[j].Episodes {
				return rows[i].Episodes > rows[j].Episodes
			}
			return rows[i].Task < rows[j].Task
		})
		rows = rows[:min(len(rows), maxTaskRows)]
		sort.Slice(rows, func(i, j int) bool { return rows[i].Task < rows[j].Task })
		ef := make([]Facet, 0, len(errs))
		for v, n := range errs {
			ef = append(ef, Facet{v, n})
		}
		sort.Slice(ef, func(i, j int) bool {
			if ef[i].Count != ef[j].Count {
				return ef[i].Count > ef[j].Count
			}
			return ef[i].Value < ef[j].Value
		})
		out["episodes"], out["rewards"], out["tasks"], out["error_types"] = n, rewards, rows, ef
		out["turn_latency_ms"] = histogram(latencyBuckets, turnMS)
		out["model_latency_ms"] = histogram(latencyBuckets, modelMS)
		out["tokens"] = histogram(tokenBuckets, tokens)
	})
	if err != nil {
		out["index_error"] = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}
